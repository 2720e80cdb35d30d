// SPDX-License-Identifier: Apache-2.0
// The event counters. v1model lets ingress and egress share a top-level extern instance, so both
// count into the same ina_events / ina_job_events (egress counts ecn_marked).
#ifndef INA_V1MODEL_COUNTERS_P4
#define INA_V1MODEL_COUNTERS_P4

counter(NUM_EVENTS, CounterType.packets_and_bytes) ina_events;
counter(JOB_EVENTS_SIZE, CounterType.packets_and_bytes) ina_job_events;

// Counts event for the packet, and for job when job_known is set and the job id fits the array.
control CountEvent(in bit<8> event, in bit<1> job_known, in job_id_t job) {
    apply {
        if (event != EVENT_NONE) {
            ina_events.count((bit<32>)event);
            if (job_known == 1 && job < MAX_JOBS) {
                ina_job_events.count((bit<32>)job * NUM_EVENTS + (bit<32>)event);
            }
        }
    }
}

control EventCounting(in ina_meta_t meta) {
    CountEvent() outcome;
    CountEvent() overflow;
    apply {
        // Count on a packet's first pass: forwarding has already marked an evicted partial for
        // its second pass (evict_pass) and that pass alone has recirculate set.
        if (meta.evict_pass == 0 || meta.recirculate == 1) {
            outcome.apply(meta.event, meta.job_known, meta.event_job);
            if (meta.overflow == 1) {
                overflow.apply(EVENT_OVERFLOW, meta.job_known, meta.event_job);
            }
            if (meta.evicted == 1 && meta.evicted_job < MAX_JOBS) {
                ina_job_events.count((bit<32>)meta.evicted_job * NUM_EVENTS + EVENT_EVICTED);
            }
        } else if (meta.event == EVENT_DROP_UNKNOWN_JOB) {
            ina_events.count(EVENT_DROP_UNKNOWN_JOB); // an evicted partial whose job has no PS
        }
    }
}

#endif // INA_V1MODEL_COUNTERS_P4
