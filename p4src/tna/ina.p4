// SPDX-License-Identifier: Apache-2.0
// INA switch, TNA build (Tofino 1, bf-p4c). This file only wires the controls of include/
// together; the behaviour is docs/protocol.md, and p4src/README.md lists what differs from the
// v1model build. Not compiled in this repository's CI (no bf-p4c): see p4src/README.md.
#include <core.p4>
#include <tna.p4>

#include "../define.p4"
#include "../size.p4"
#include "../header.p4"
#include "include/define_tna.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/control/settings.p4"
#include "include/control/validation.p4"
#include "include/control/job_lookup.p4"
#include "include/control/slot_state.p4"
#include "include/control/slot_values.p4"
#include "include/control/ina_forwarding.p4"
#include "include/control/ipv4_forwarding.p4"
#include "include/control/counters.p4"
#include "include/control/ecn_marking.p4"

control Ingress(inout headers_t hdr, inout ig_meta_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Settings() settings;
    Validation() validation;
    JobLookup() job_lookup;
    SlotState() slot_state;
    SlotValues() slot_values;
    InaForwarding() ina_forwarding;
    Ipv4Forwarding() ipv4_forwarding;
    EventCounting() event_counting;
    EvictionCounting() eviction_counting;

    apply {
        md.evicted = 0;
        md.lane_op = LANE_NONE;
        md.state_op = STATE_NONE;
        if (hdr.recirc.isValid()) {
            md.first_pass = 0;
            md.lane_op = hdr.recirc.lane_op;
        } else {
            md.first_pass = 1;
            hdr.recirc.setValid();
            hdr.recirc.pass = 0;
            hdr.recirc.passes_left = 0;
            hdr.recirc.release_tag = 0;
            hdr.recirc.pad = 0;
            hdr.recirc.merge_state = 0;
            hdr.recirc.clipped = 0;
        }
        settings.apply(md);
        validation.apply(hdr, md, ig_prsr_md);
        if (md.is_ina == 1) {
            job_lookup.apply(hdr, md, ig_intr_md);
            if (md.first_pass == 0 ||
                    (md.event == EVENT_NONE && md.role == ROLE_WORKER) ||
                    (md.event == EVENT_RESULT && md.release_on_result == 1)) {
                slot_state.apply(hdr, md);
                slot_values.apply(hdr, md);
            }
            ina_forwarding.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        } else {
            ipv4_forwarding.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        }
        event_counting.apply(hdr, md);
        eviction_counting.apply(md);
    }
}

control Egress(inout headers_t hdr, inout eg_meta_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    EcnMarking() ecn_marking;

    apply {
        ecn_marking.apply(hdr, eg_intr_md);
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;
