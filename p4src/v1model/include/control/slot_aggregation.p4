// SPDX-License-Identifier: Apache-2.0
// The aggregator slots and their state machine (docs/protocol.md, "Data packet from member worker"
// steps 1-8, the slot range check before step 3, and the ATP-mode release by a result). BMv2 lets
// one pass read and write a register freely, so this is the state machine written out directly;
// the TNA build splits it into RegisterActions (p4src/tna/include/control/slot_state.p4 and
// slot_values.p4).
#ifndef INA_V1MODEL_SLOT_AGGREGATION_P4
#define INA_V1MODEL_SLOT_AGGREGATION_P4

// Per-value statements. `|+|` on int<32> saturates in BMv2; comparing with the wrapping sum tells
// whether this value clipped. BMv2 hands a register's value back unsigned whatever its P4 type, so
// every read goes through bit<32> and a cast, which BMv2 sign-extends.
#define DECLARE_VALUE_REGISTER(i) register<bit<32>>(NUM_SLOTS) slot_value_##i;
#define STORE_VALUE(i) slot_value_##i.write(idx, (bit<32>)hdr.ina_values.v##i);
#define ADD_VALUE(i) { \
        bit<32> raw_##i; \
        slot_value_##i.read(raw_##i, idx); \
        value_t old_##i = (value_t)raw_##i; \
        value_t sum_##i = old_##i |+| hdr.ina_values.v##i; \
        clipped = clipped | (sum_##i != old_##i + hdr.ina_values.v##i ? 1w1 : 1w0); \
        slot_value_##i.write(idx, (bit<32>)sum_##i); \
        hdr.ina_values.v##i = sum_##i; \
    }
#define LOAD_VALUE(i) { \
        bit<32> raw_##i; \
        slot_value_##i.read(raw_##i, idx); \
        hdr.ina_values.v##i = (value_t)raw_##i; \
    }
#define SWAP_VALUE(i) { \
        bit<32> raw_##i; \
        slot_value_##i.read(raw_##i, idx); \
        slot_value_##i.write(idx, (bit<32>)hdr.ina_values.v##i); \
        hdr.ina_values.v##i = (value_t)raw_##i; \
    }

// ECN/OVERFLOW flags carried out of a slot whose state is st.
bit<16> state_flags(in bit<8> st) {
    return ((st & SLOT_STATE_ECN) != 0 ? (bit<16>)FLAG_ECN : 16w0) |
           ((st & SLOT_STATE_OVERFLOW) != 0 ? (bit<16>)FLAG_OVERFLOW : 16w0);
}

control SlotAggregation(inout headers_t hdr, inout ina_meta_t meta) {
    register<job_id_t>(NUM_SLOTS) slot_job;
    register<seq_t>(NUM_SLOTS) slot_seq;
    register<bit<8>>(NUM_SLOTS) slot_priority;
    register<bitmap_t>(NUM_SLOTS) slot_bitmap;
    register<bit<8>>(NUM_SLOTS) slot_count;
    register<bit<8>>(NUM_SLOTS) slot_state;
    INA_FOREACH_VALUE(DECLARE_VALUE_REGISTER)

    bit<32> idx;
    job_id_t o_job;
    seq_t o_seq;
    bit<8> o_priority;
    bitmap_t o_bitmap;
    bit<8> o_count;
    bit<8> o_state;
    bit<1> clipped;

    // Make the slot hold only this packet's contribution (a claim).
    action claim() {
        slot_job.write(idx, hdr.ina.job_id);
        slot_seq.write(idx, hdr.ina.seq);
        slot_priority.write(idx, hdr.ina.priority);
        slot_bitmap.write(idx, hdr.ina.bitmap);
        slot_count.write(idx, 1);
        slot_state.write(idx, (hdr.ina.flags & FLAG_ECN) != 0 ? (bit<8>)SLOT_STATE_ECN : 8w0);
    }

    // Frees the slot. Only count and state are written (as on TNA, where each write costs a
    // stateful ALU); the other registers mean nothing while count is 0.
    action release() {
        slot_count.write(idx, 0);
        slot_state.write(idx, 0);
    }

    // The packet leaves carrying the slot's previous owner (o_*); SWAP_VALUE gives it the values.
    action carry_owner(bit<16> flag) {
        hdr.ina.job_id = o_job;
        hdr.ina.seq = o_seq;
        hdr.ina.priority = o_priority;
        hdr.ina.bitmap = o_bitmap;
        hdr.ina.flags = flag | state_flags(o_state);
    }

    apply {
        idx = (bit<32>)hdr.ina.slot;
        clipped = 0;
        bool data = hdr.ina.pkt_type == INA_TYPE_DATA;
        // Steps 3-8, and an ATP result, touch the slot: only one that exists and is active. (No
        // early returns: p4c then loses track of the register reads below.)
        bool touch = true;
        if (data) {
            meta.egress_to = OUT_PS;
            if (meta.ina_enabled == 0 || (hdr.ina.flags & FLAG_BYPASS) != 0) {
                meta.event = EVENT_BYPASS;                                // 1
                touch = false;
            } else if (meta.fan_in <= 1) {
                meta.event = EVENT_COMPLETED;                             // 2 (and fan_in 0)
                touch = false;
            }
        }
        if (touch && (hdr.ina.slot >= meta.active_slots || hdr.ina.slot >= NUM_SLOTS)) {
            if (data) {
                meta.event = EVENT_DROP_SLOT_RANGE;
                meta.egress_to = OUT_DROP;
            } // a result's slot is only a hint; out of range it frees nothing
            touch = false;
        }
        if (touch && !data) {
            // ATP mode: the result frees the slot still holding its chunk.
            slot_count.read(o_count, idx);
            slot_job.read(o_job, idx);
            slot_seq.read(o_seq, idx);
            if (o_count != 0 && o_job == hdr.ina.job_id && o_seq == hdr.ina.seq) {
                release();
            }
        } else if (touch) {
            slot_count.read(o_count, idx);
            slot_job.read(o_job, idx);
            slot_seq.read(o_seq, idx);
            slot_priority.read(o_priority, idx);
            slot_bitmap.read(o_bitmap, idx);
            slot_state.read(o_state, idx);
            bool resend = (hdr.ina.flags & FLAG_RESEND) != 0;
            bool same_job = o_job == hdr.ina.job_id;
            bool mine = o_count != 0 && same_job && o_seq == hdr.ina.seq;

            if (mine && !resend && (o_bitmap & meta.worker_bit) != 0) {
                meta.event = EVENT_DUPLICATE;                             // 4, duplicate
                meta.egress_to = OUT_DROP;
            } else if (mine) {
                if ((o_bitmap & meta.worker_bit) == 0) {                  // 4, add
                    INA_FOREACH_VALUE(ADD_VALUE)
                } else {
                    INA_FOREACH_VALUE(LOAD_VALUE)                         // 4, flush as is
                }
                bitmap_t bitmap = o_bitmap | meta.worker_bit;
                bit<8> count = (o_bitmap & meta.worker_bit) == 0 ? o_count + 1 : o_count;
                bit<8> st = o_state | (clipped == 1 ? (bit<8>)SLOT_STATE_OVERFLOW : 8w0) |
                            ((hdr.ina.flags & FLAG_ECN) != 0 ? (bit<8>)SLOT_STATE_ECN : 8w0);
                hdr.ina.bitmap = bitmap;
                hdr.ina.flags = hdr.ina.flags | state_flags(st);
                slot_bitmap.write(idx, bitmap);
                if (resend) {
                    hdr.ina.flags = hdr.ina.flags | FLAG_FLUSHED;
                    release();
                    meta.event = EVENT_FLUSHED;
                } else if (count >= meta.fan_in) {
                    if (meta.release_on_result == 1) {
                        slot_count.write(idx, count);
                        slot_state.write(idx, st | SLOT_STATE_COMPLETE);
                    } else {
                        release();
                    }
                    meta.event = EVENT_COMPLETED;
                } else {
                    slot_count.write(idx, count);
                    slot_state.write(idx, st);
                    meta.event = EVENT_AGGREGATED;
                    meta.egress_to = OUT_DROP;
                }
            } else if (resend) {
                meta.event = EVENT_RESEND_FORWARDED;                      // 5: never claims
            } else if (o_count == 0) {
                claim();                                                  // 3
                INA_FOREACH_VALUE(STORE_VALUE)
                meta.event = EVENT_CLAIMED;
                meta.egress_to = OUT_DROP;
            } else if (same_job && (int<32>)(hdr.ina.seq - o_seq) > 0) {
                claim();                                                  // 6, stale takeover
                INA_FOREACH_VALUE(SWAP_VALUE)
                carry_owner(FLAG_STALE);
                meta.event = EVENT_STALE;
            } else if (!same_job && meta.preempt == 1 && hdr.ina.priority > o_priority) {
                claim();                                                  // 8, preemption
                INA_FOREACH_VALUE(SWAP_VALUE)
                carry_owner(FLAG_PREEMPTED);
                meta.event = EVENT_PREEMPTED;
                meta.evicted = 1;
                meta.evicted_job = o_job;
                meta.egress_to = OUT_EVICT;
            } else {
                hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;           // 7, 8
                meta.event = EVENT_COLLISION;
            }
            meta.overflow = clipped;
        }
    }
}

#undef DECLARE_VALUE_REGISTER
#undef STORE_VALUE
#undef ADD_VALUE
#undef LOAD_VALUE
#undef SWAP_VALUE

#endif // INA_V1MODEL_SLOT_AGGREGATION_P4
