// SPDX-License-Identifier: Apache-2.0
// INA switch, v1model build (BMv2 simple_switch_grpc). This file only wires the controls of
// include/ together; the behaviour is docs/protocol.md.
#include <core.p4>
#include <v1model.p4>

#include "../define.p4"
#include "../size.p4"
#include "../header.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/control/counters.p4"
#include "include/control/settings.p4"
#include "include/control/validation.p4"
#include "include/control/job_lookup.p4"
#include "include/control/slot_aggregation.p4"
#include "include/control/result_unicast.p4"
#include "include/control/ina_forwarding.p4"
#include "include/control/ipv4_forwarding.p4"
#include "include/control/ecn_marking.p4"

control InaIngress(inout headers_t hdr, inout ina_meta_t meta, inout standard_metadata_t standard_metadata) {
    Settings() settings;
    Validation() validation;
    JobLookup() job_lookup;
    SlotAggregation() slot_aggregation;
    ResultUnicast() result_unicast;
    InaForwarding() ina_forwarding;
    Ipv4Forwarding() ipv4_forwarding;
    EventCounting() event_counting;

    apply {
        meta.overflow = 0;
        meta.evicted = 0;
        settings.apply(meta);
        validation.apply(hdr, meta, standard_metadata);
        if (meta.is_ina == 1) {
            job_lookup.apply(hdr, meta, standard_metadata);
            // Worker data that passed validation; in ATP mode a result too (it frees its slot).
            if ((meta.evict_pass == 0 && meta.event == EVENT_NONE) ||
                    (meta.event == EVENT_RESULT && meta.release_on_result == 1)) {
                slot_aggregation.apply(hdr, meta);
            }
            result_unicast.apply(hdr, meta);
            ina_forwarding.apply(hdr, meta, standard_metadata);
        } else {
            ipv4_forwarding.apply(hdr, meta, standard_metadata);
        }
        event_counting.apply(meta);
    }
}

control InaEgress(inout headers_t hdr, inout ina_meta_t meta, inout standard_metadata_t standard_metadata) {
    EcnMarking() ecn_marking;

    apply {
        if (meta.recirculate == 1) {
            recirculate_preserving_field_list(0);
        } else if (hdr.ina.isValid() && hdr.ina.pkt_type == INA_TYPE_RESULT &&
                standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata); // a result never goes back out its ingress port
        } else {
            ecn_marking.apply(hdr, meta, standard_metadata);
        }
    }
}

V1Switch(InaParser(), InaVerifyChecksum(), InaIngress(), InaEgress(), InaComputeChecksum(),
         InaDeparser()) main;
