// SPDX-License-Identifier: Apache-2.0
// Egress ECN marking of INA data packets above the ina_settings queue threshold (bridged).
#ifndef INA_TNA_ECN_MARKING_P4
#define INA_TNA_ECN_MARKING_P4

control EcnMarking(inout headers_t hdr, inout eg_meta_t md, in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<32>, bit<32>>(NUM_EVENTS, CounterType_t.PACKETS_AND_BYTES) ina_egress_events;
    Counter<bit<32>, bit<32>>(TNA_JOB_EVENTS_SIZE, CounterType_t.PACKETS_AND_BYTES) ina_job_egress_events;

    // job << 5 | ecn_marked, as EventCounting's index.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) job_event_hash;
    action index_ecn() {
        md.job_event = job_event_hash.get({hdr.ina.job_id[9:0], (bit<5>)EVENT_ECN_MARKED});
    }
    @hidden table job_event_index {
        actions = { index_ecn; } default_action = index_ecn(); size = 1;
    }

    // enq_qdepth >= threshold iff threshold - enq_qdepth is 0 or negative (a gateway cannot
    // compare two fields).
    // The depth is copied out of its shared container first: the subtraction works on whole containers.
    action depth() {
        md.qdepth = (bit<32>)eg_intr_md.enq_qdepth;
    }
    action gap() {
        md.ecn_gap = hdr.bridge.ecn_threshold - md.qdepth;
    }
    @hidden table queue_depth {
        actions = { depth; } default_action = depth(); size = 1;
    }
    @hidden table queue_gap {
        actions = { gap; } default_action = gap(); size = 1;
    }

    apply {
        queue_depth.apply();
        queue_gap.apply();
        if (hdr.bridge.ina_data == 1 && hdr.ina.isValid() &&
                (md.ecn_gap == 0 || md.ecn_gap[31:31] == 1)) {
            hdr.ina.flags = hdr.ina.flags | FLAG_ECN;
            ina_egress_events.count(EVENT_ECN_MARKED);
            job_event_index.apply();
            ina_job_egress_events.count(md.job_event);
        }
    }
}

#endif // INA_TNA_ECN_MARKING_P4
