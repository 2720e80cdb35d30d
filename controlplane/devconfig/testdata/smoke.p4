// SPDX-License-Identifier: Apache-2.0
// The smallest TNA program: LoadBfP4c is tested against what bf-p4c writes for it (the layout is
// the same for any program).
#include <core.p4>
#include <tna.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct h_t { eth_t e; }
struct m_t { }
parser IP(packet_in p, out h_t h, out m_t m, out ingress_intrinsic_metadata_t ig) {
  state start { p.extract(ig); p.advance(PORT_METADATA_SIZE); p.extract(h.e); transition accept; } }
control I(inout h_t h, inout m_t m, in ingress_intrinsic_metadata_t ig, in ingress_intrinsic_metadata_from_parser_t a,
  inout ingress_intrinsic_metadata_for_deparser_t b, inout ingress_intrinsic_metadata_for_tm_t t) {
  action fwd(PortId_t p) { t.ucast_egress_port = p; }
  table tb { key = { h.e.d: exact; } actions = { fwd; NoAction; } size = 16; }
  apply { tb.apply(); } }
control ID(packet_out p, inout h_t h, in m_t m, in ingress_intrinsic_metadata_for_deparser_t d) { apply { p.emit(h); } }
parser EP(packet_in p, out h_t h, out m_t m, out egress_intrinsic_metadata_t eg) { state start { p.extract(eg); transition accept; } }
control E(inout h_t h, inout m_t m, in egress_intrinsic_metadata_t eg, in egress_intrinsic_metadata_from_parser_t a,
  inout egress_intrinsic_metadata_for_deparser_t b, inout egress_intrinsic_metadata_for_output_port_t c) { apply { } }
control ED(packet_out p, inout h_t h, in m_t m, in egress_intrinsic_metadata_for_deparser_t d) { apply { } }
Pipeline(IP(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
