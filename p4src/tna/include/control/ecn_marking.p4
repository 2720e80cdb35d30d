// SPDX-License-Identifier: Apache-2.0
// Egress ECN marking of INA data packets above the ina_settings queue threshold (bridged).
#ifndef INA_TNA_ECN_MARKING_P4
#define INA_TNA_ECN_MARKING_P4

control EcnMarking(inout headers_t hdr, in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<32>, bit<32>>(NUM_EVENTS, CounterType_t.PACKETS_AND_BYTES) ina_egress_events;
    Counter<bit<32>, bit<32>>(JOB_EVENTS_SIZE, CounterType_t.PACKETS_AND_BYTES) ina_job_egress_events;

    apply {
        if (hdr.bridge.ina_data == 1 && hdr.ina.isValid() &&
                eg_intr_md.enq_qdepth >= hdr.bridge.ecn_threshold) {
            hdr.ina.flags = hdr.ina.flags | FLAG_ECN;
            ina_egress_events.count(EVENT_ECN_MARKED);
            if (hdr.ina.job_id < MAX_JOBS) {
                ina_job_egress_events.count(JOB_EVENT_BASE(hdr.ina.job_id) + EVENT_ECN_MARKED);
            }
        }
    }
}

#endif // INA_TNA_ECN_MARKING_P4
