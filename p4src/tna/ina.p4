// SPDX-License-Identifier: Apache-2.0
// INA switch, TNA build (Tofino 1, bf-p4c; does not fit 12 stages yet, see p4src/README.md).
// This file only wires the controls of include/
// together; the behaviour is docs/protocol.md, and p4src/README.md lists what differs from the
// v1model build.
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
#include "include/control/slot_values.p4"
#include "include/control/slot_state.p4"
#include "include/control/ina_forwarding.p4"
#include "include/control/ipv4_forwarding.p4"
#include "include/control/counters.p4"
#include "include/control/ecn_marking.p4"

control Ingress(inout headers_t hdr, inout ig_meta_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    // slot_tag: taken on the decision pass (SlotDecision), released on the final lane pass
    // (LanePass). The two passes are the two branches of one if, so bf-p4c sees their tables as
    // exclusive and can stack the lanes into the stages the decision uses.
    Register<bit<32>, bit<32>>(NUM_SLOTS, 0) slot_tag;

    Settings() settings;
    Validation() validation;
    PsLookup() ps_lookup;
    JobLookup() job_lookup;
    SlotDecision(slot_tag) slot_decision;
    LanePass(slot_tag) lane_pass;
    InaForwarding() ina_forwarding;
    Ipv4Forwarding() ipv4_forwarding;
    JobEventBase() job_event_base;
    EventCounting() event_counting;
    EvictionCounting() eviction_counting;

    apply {
        md.evicted = 0;
        md.event = EVENT_NONE;
        md.slot_index = (bit<32>)hdr.ina.slot;
        settings.apply(md);
        ps_lookup.apply(hdr, md);
        job_event_base.apply(hdr.ina.job_id, md.ix); // the packet's own job, before any carry
        if (md.first_pass == 0) {
            lane_pass.apply(hdr, md);
        } else {
            validation.apply(hdr, md, ig_prsr_md);
            if (md.is_ina == 1) {
                job_lookup.apply(hdr, md, ig_intr_md);
                slot_decision.apply(hdr, md);
            }
        }
        if (md.is_ina == 1) {
            ina_forwarding.apply(hdr, md, ig_intr_md, ig_dprsr_md, ig_tm_md);
        } else {
            ipv4_forwarding.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        }
        event_counting.apply(hdr, md);
        eviction_counting.apply(hdr, md);
    }
}

control Egress(inout headers_t hdr, inout eg_meta_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    EcnMarking() ecn_marking;

    apply {
        if (hdr.bridge.ina_result == 1 && eg_intr_md.egress_port == hdr.bridge.ingress_port) {
            eg_dprsr_md.drop_ctl = 1; // a result never goes back out its ingress port
        } else {
            ecn_marking.apply(hdr, md, eg_intr_md);
        }
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;
