// SPDX-License-Identifier: Apache-2.0
// Length, parser, version and type checks (docs/protocol.md "Validation"), first pass only.
// Tofino's ingress has no packet length: the frame-length check is the IPv4 and UDP length fields
// plus a parser that ran to the last value (see p4src/README.md, "TNA differences").
#ifndef INA_TNA_VALIDATION_P4
#define INA_TNA_VALIDATION_P4

control Validation(in headers_t hdr, inout ig_meta_t md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md) {
    apply {
        if (md.is_ina == 1) {
            // One gateway per test: a gateway reads at most 4 bytes + 12 bits of the packet.
            if (ig_prsr_md.parser_err != 0 || !hdr.b3.isValid()) {
                md.event = EVENT_DROP_MALFORMED;
            } else if (md.checksum_err == 1 || hdr.ipv4.flags[0:0] == 1) { // bad checksum, MF
                md.event = EVENT_DROP_MALFORMED;
            } else if (hdr.ipv4.ihl != 5) {
                md.event = EVENT_DROP_MALFORMED;
            } else if (hdr.ipv4.total_len != INA_IPV4_TOTAL_LEN) {
                md.event = EVENT_DROP_MALFORMED;
            } else if (hdr.udp.length != INA_UDP_LEN) {
                md.event = EVENT_DROP_MALFORMED;
            } else if (hdr.ina.version != INA_VERSION) {
                md.event = EVENT_DROP_VERSION;
            } else if (hdr.ina.pkt_type != INA_TYPE_DATA && hdr.ina.pkt_type != INA_TYPE_RESULT) {
                md.event = EVENT_DROP_MALFORMED;
            }
        }
    }
}

#endif // INA_TNA_VALIDATION_P4
