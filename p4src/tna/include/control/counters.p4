// SPDX-License-Identifier: Apache-2.0
// Event counters. On Tofino an extern instance belongs to one gress, and a Counter takes one index
// per pass, so egress counts ecn_marked in its own pair (ina_egress_events /
// ina_job_egress_events, same indices) and a victim's `evicted` goes to ina_job_evicted[job].
// Every job id counted here is below MAX_JOBS: JobLookup drops a larger one before any table,
// and slot_tag only ever holds job ids that passed it.
#ifndef INA_TNA_COUNTERS_P4
#define INA_TNA_COUNTERS_P4

// job * NUM_EVENTS without a multiplier (Tofino's ALUs shift and add): 22 = 16 + 4 + 2. A counter's
// index must be a plain field, so each step is a table of its own; the base is computed early in
// the pass and the event added where it is known. The job id enters through an identity hash, so
// the 32-bit arithmetic is not tied to the 16-bit containers the header's job id lives in.
control JobEventBase(in job_id_t job, inout event_index_t ix) {
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) job_hash;
    action load() {
        ix.job = job_hash.get({job});
    }
    action shifts() {
        ix.x16 = ix.job << 4;
        ix.x4 = ix.job << 2;
        ix.x2 = ix.job << 1;
    }
    action add4() {
        ix.x16 = ix.x16 + ix.x4;
    }
    action add2() {
        ix.base = ix.x16 + ix.x2;
    }
    @hidden table step0 { actions = { load; } default_action = load(); size = 1; }
    @hidden table step1 { actions = { shifts; } default_action = shifts(); size = 1; }
    @hidden table step2 { actions = { add4; } default_action = add4(); size = 1; }
    @hidden table step3 { actions = { add2; } default_action = add2(); size = 1; }

    apply {
        step0.apply();
        step1.apply();
        step2.apply();
        step3.apply();
    }
}

control EventCounting(in headers_t hdr, inout ig_meta_t md) {
    Counter<bit<32>, bit<32>>(NUM_EVENTS, CounterType_t.PACKETS_AND_BYTES) ina_events;
    Counter<bit<32>, bit<32>>(JOB_EVENTS_SIZE, CounterType_t.PACKETS_AND_BYTES) ina_job_events;

    action index_event() {
        md.ix.index = md.ix.base + md.event;
    }
    @hidden table job_event_index {
        actions = { index_event; } default_action = index_event(); size = 1;
    }

    // The outcome on the decision pass (the packet still carries its own job id then); `overflow`
    // on the final lane pass, once the lanes ran.
    apply {
        bit<1> per_job = 0;
        if (md.first_pass == 1) {
            if (md.event != EVENT_NONE) {
                ina_events.count((bit<32>)md.event);
                per_job = md.job_known;
            }
        } else if (md.event == EVENT_DROP_UNKNOWN_JOB) {
            ina_events.count(EVENT_DROP_UNKNOWN_JOB); // an evicted partial whose job has no PS
        } else if (hdr.recirc.isValid() && hdr.recirc.pass == TNA_PASSES - 1 &&
                hdr.recirc.clipped == 1) {
            ina_events.count(EVENT_OVERFLOW);
            md.event = EVENT_OVERFLOW; // only an add clips: the packet still carries its own job
            per_job = 1;
        }
        if (per_job == 1) {
            job_event_index.apply();
            ina_job_events.count((bit<32>)md.ix.index);
        }
    }
}

control EvictionCounting(in headers_t hdr, in ig_meta_t md) {
    Counter<bit<32>, bit<32>>(MAX_JOBS, CounterType_t.PACKETS_AND_BYTES) ina_job_evicted;

    apply {
        if (md.first_pass == 1 && md.evicted == 1) {
            ina_job_evicted.count((bit<32>)hdr.recirc.owner_tag[15:0]);
        }
    }
}

#endif // INA_TNA_COUNTERS_P4
