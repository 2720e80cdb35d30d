// SPDX-License-Identifier: Apache-2.0
// INA switch, TNA build (Tofino 1 and 2, bf-p4c; resources in p4src/README.md).
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
#include "include/control/result_unicast.p4"
#include "include/control/slot_values.p4"
#include "include/control/slot_state.p4"
#include "include/control/ina_forwarding.p4"
#include "include/control/ipv4_forwarding.p4"
#include "include/control/counters.p4"
#include "include/control/ecn_marking.p4"

// The bitmap decision ANDs and ORs slot_bitmap's 32-bit output with the worker bit in one action
// (md.has_bit, hdr.ina.bitmap): whole 32-bit containers, so no operand is split across two.
@pa_container_size("ingress", "md.has_bit", 32)
@pa_container_size("ingress", "md.worker_bit", 32)
@pa_container_size("ingress", "md.old_bitmap", 32)
@pa_container_size("ingress", "hdr.ina.bitmap", 32)
control Ingress(inout headers_t hdr, inout ig_meta_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    // slot_tag: taken or read on the decision pass, freed on a release pass, all by SlotTag's one
    // table. slot_seq: SlotDecision's, and AtpRelease reads it. The decision and the lane passes
    // are the two branches of one if, so bf-p4c sees their tables as exclusive and stacks the
    // lanes into the stages the decision uses.
    Register<bit<32>, bit<32>>(NUM_SLOTS, 0) slot_tag;
    Register<seq_t, bit<32>>(NUM_SLOTS, 0) slot_seq;

    Settings() settings;
    Validation() validation;
    PsLookup() ps_lookup;
    JobLookup() job_lookup;
    ResultUnicast() result_unicast;
    SlotEntry() slot_entry;
    SlotTag(slot_tag) slot_tag_access;
    SlotDecision(slot_seq) slot_decision;
    AtpRelease(slot_seq) atp_release;
    LanePass() lane_pass;
    SlotState() slot_state;
    InaForwarding() ina_forwarding;
    Ipv4Forwarding() ipv4_forwarding;
    EventCounting() event_counting;
    EvictionCounting() eviction_counting;

    apply {
        settings.apply(hdr, md);
        ps_lookup.apply(hdr, md);
        result_unicast.apply(hdr, md);
        if (md.first_pass == 0 && hdr.recirc.lane_op != LANE_NONE) {
            lane_pass.apply(hdr, md);
        } else {
            // A decision pass, or the release pass that follows the lanes of a completed (ESA) or
            // flushed chunk, or an ATP result's second pass: slot_tag is touched only here, by one
            // table, so its stage is not tied to the lanes'.
            if (md.first_pass == 0) {
                if (hdr.recirc.release == 1) {
                    md.tag_op = TAG_RELEASE;
                }
            } else if (md.is_ina == 1) {
                // Validation, ina_ps and ina_job run side by side in the first stage; the
                // outcome is decided from their results, so the slot's stateful stages start early.
                validation.apply(hdr, md, ig_prsr_md);
                job_lookup.apply(hdr, md, ig_intr_md);
                // One if-else chain: bf-p4c sees the outcomes as exclusive and writes them at once.
                if (md.event != EVENT_NONE) {
                    // validation dropped it
                } else if (md.ps_hit == 0) {
                    md.event = EVENT_DROP_UNKNOWN_JOB;
                } else if (hdr.ina.pkt_type == INA_TYPE_DATA && md.role == ROLE_WORKER) {
                    md.job_known = 1;
                    slot_entry.apply(hdr, md);
                } else if (hdr.ina.pkt_type == INA_TYPE_DATA && md.role == ROLE_TRANSIT) {
                    md.job_known = 1;
                    md.event = EVENT_TRANSIT;
                    hdr.recirc.egress_to = OUT_PS;
                } else if (hdr.ina.pkt_type == INA_TYPE_RESULT && md.role == ROLE_RESULT) {
                    md.job_known = 1;
                    md.event = EVENT_RESULT;
                    hdr.recirc.egress_to = OUT_MCAST;
                    // ATP: the result frees its chunk's slot (a result's slot is only a hint:
                    // out of range it frees nothing).
                    if (md.release_on_result == 1 && md.slot_room != 0 &&
                            hdr.ina.slot[15:10] == 0) {
                        md.atp = 1;
                        md.tag_op = TAG_LOOK;
                    }
                } else {
                    md.job_known = 1;
                    md.event = EVENT_DROP_BAD_PORT;
                }
            }
            slot_tag_access.apply(hdr, md);
            if (md.touch == 1) {
                slot_decision.apply(hdr, md);
            } else if (md.atp == 1) {
                atp_release.apply(hdr, md);
            }
            if (md.is_ina == 0) {
                ipv4_forwarding.apply(hdr, md, ig_dprsr_md, ig_tm_md);
            }
        }
        if (md.first_pass == 0 && hdr.recirc.lane_op != LANE_NONE &&
                hdr.recirc.pass == TNA_PASSES - 1) {
            slot_state.apply(hdr, md);
        }
        // Counted before INA forwarding, which invalidates hdr.recirc on a packet's final pass.
        event_counting.apply(hdr, md);
        eviction_counting.apply(hdr, md);
        if (md.is_ina == 1) {
            ina_forwarding.apply(hdr, md, ig_dprsr_md, ig_tm_md);
        }
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
