// SPDX-License-Identifier: Apache-2.0
// Egress ECN marking of INA data packets above the ina_settings queue threshold.
#ifndef INA_V1MODEL_ECN_MARKING_P4
#define INA_V1MODEL_ECN_MARKING_P4

control EcnMarking(inout headers_t hdr, in ina_meta_t meta, in standard_metadata_t sm) {
    apply {
        if (hdr.ina.isValid() && hdr.ina.pkt_type == INA_TYPE_DATA &&
                sm.enq_qdepth >= meta.ecn_threshold) {
            hdr.ina.flags = hdr.ina.flags | FLAG_ECN;
            ina_events.count(EVENT_ECN_MARKED);
            if (hdr.ina.job_id < MAX_JOBS) {
                ina_job_events.count((bit<32>)hdr.ina.job_id * NUM_EVENTS + EVENT_ECN_MARKED);
            }
        }
    }
}

#endif // INA_V1MODEL_ECN_MARKING_P4
