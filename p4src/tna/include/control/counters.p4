// SPDX-License-Identifier: Apache-2.0
// Event counters. On Tofino an extern instance belongs to one gress, and a Counter takes one index
// per pass, so egress counts ecn_marked in its own pair (ina_egress_events /
// ina_job_egress_events, same indices) and a victim's `evicted` goes to ina_job_evicted[job].
//
// A job's cells in ina_job_events start at job << 5 (TNA_EVENT_STRIDE), not job * NUM_EVENTS:
// an identity hash of (job, event) is the index in one step, where a multiply would be a chain of
// shift-and-add tables. The controller reads the stride from the counter's size in the P4Info.
// Job ids are below MAX_JOBS (the controller installs no other), so job[9:0] is the job.
#ifndef INA_TNA_COUNTERS_P4
#define INA_TNA_COUNTERS_P4

control EventCounting(in headers_t hdr, inout ig_meta_t md) {
    Counter<bit<32>, bit<32>>(NUM_EVENTS, CounterType_t.PACKETS_AND_BYTES) ina_events;
    Counter<bit<32>, bit<32>>(TNA_JOB_EVENTS_SIZE, CounterType_t.PACKETS_AND_BYTES) ina_job_events;

    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) job_event_hash;
    action index_event() {
        md.job_event = job_event_hash.get({md.own_job[9:0], md.event[4:0]});
    }
    @hidden table job_event_index {
        actions = { index_event; } default_action = index_event(); size = 1;
    }

    // The outcome on the decision pass (the packet still carries its own job id then); on a lane
    // pass, `overflow` (LanePass sets md.event to it early, so the index is ready when the clip
    // check has run), or the drop of an evicted partial whose job has no PS any more.
    apply {
        job_event_index.apply();
        if (md.first_pass == 1) {
            if (md.event != EVENT_NONE) {
                ina_events.count((bit<32>)md.event);
                if (md.job_known == 1) {
                    ina_job_events.count(md.job_event);
                }
            }
        } else if (hdr.recirc.egress_to == OUT_PS && md.ps_hit == 0 &&
                (hdr.recirc.lane_op == LANE_NONE ||
                 (hdr.recirc.pass == TNA_PASSES - 1 && hdr.recirc.release == 0))) {
            ina_events.count(EVENT_DROP_UNKNOWN_JOB);
        } else if (hdr.recirc.lane_op != LANE_NONE && hdr.recirc.pass == TNA_PASSES - 1 &&
                hdr.recirc.clipped != 0) {
            ina_events.count(EVENT_OVERFLOW); // once per packet whose adds clipped
            ina_job_events.count(md.job_event);
        }
    }
}

control EvictionCounting(in headers_t hdr, in ig_meta_t md) {
    Counter<bit<32>, bit<32>>(MAX_JOBS, CounterType_t.PACKETS_AND_BYTES) ina_job_evicted;

    apply {
        if (md.first_pass == 1 && md.evicted == 1) {
            ina_job_evicted.count((bit<32>)hdr.recirc.owner_tag[9:0]);
        }
    }
}

#endif // INA_TNA_COUNTERS_P4
