// SPDX-License-Identifier: Apache-2.0
// Event counters. On Tofino an extern instance belongs to one gress, so egress counts ecn_marked
// in its own pair of counters (ina_egress_events / ina_job_egress_events, same indices).
#ifndef INA_TNA_COUNTERS_P4
#define INA_TNA_COUNTERS_P4

control EventCounting(in headers_t hdr, in ig_meta_t md) {
    Counter<bit<32>, bit<32>>(NUM_EVENTS, CounterType_t.PACKETS_AND_BYTES) ina_events;
    Counter<bit<32>, bit<32>>(JOB_EVENTS_SIZE, CounterType_t.PACKETS_AND_BYTES) ina_job_events;
    // Each Counter is used once per pass: the outcome on pass 1, overflow on the final pass.

    apply {
        if (md.first_pass == 1) {
            if (md.event != EVENT_NONE) {
                ina_events.count((bit<32>)md.event);
                if (md.job_known == 1 && md.event_job < MAX_JOBS) {
                    ina_job_events.count(JOB_EVENT_BASE(md.event_job) + (bit<32>)md.event);
                }
            }
        } else if (hdr.recirc.passes_left == 0 && md.clipped == 1) {
            ina_events.count(EVENT_OVERFLOW);
            if (hdr.recirc.count_job < MAX_JOBS) {
                ina_job_events.count(JOB_EVENT_BASE(hdr.recirc.count_job) + EVENT_OVERFLOW);
            }
        }
    }
}

// The victim's `evicted` needs a second index into ina_job_events in the same pass; a Counter
// takes one index per pass, so it goes to its own counter.
control EvictionCounting(in ig_meta_t md) {
    Counter<bit<32>, bit<32>>(MAX_JOBS, CounterType_t.PACKETS_AND_BYTES) ina_job_evicted;

    apply {
        if (md.first_pass == 1 && md.evicted == 1 && md.evicted_job < MAX_JOBS) {
            ina_job_evicted.count((bit<32>)md.evicted_job);
        }
    }
}

#endif // INA_TNA_COUNTERS_P4
