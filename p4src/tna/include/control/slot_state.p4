// SPDX-License-Identifier: Apache-2.0
// The slot state machine on Tofino, first pass of a worker's data packet (and of a result in ATP
// mode). Each register is touched by exactly one RegisterAction per pass, and each register's
// update depends only on its own old value and on what earlier stages decided:
//
//   slot_tag    busy | owner priority | owner job. Taken (claim or preemption) when its old value
//               is below swap_bound, which is SLOT_BUSY (free slots only) or, with preemption on,
//               SLOT_BUSY | p << 16 (free, or held by a lower priority).
//   slot_seq    set on a take; a newer seq of the same job takes it over (stale rule).
//   slot_bitmap set on a take or takeover; OR-ed with the worker bit when the slot is this chunk's.
//   slot_count  1 on a take or takeover; +1 for a new worker bit.
// slot_state lives with the values (SlotValues): its OVERFLOW bit is only known once the lanes ran.
//
// A slot is free when slot_tag's busy bit is clear. Completion (ESA) and flush clear it on the
// packet's final pass (tag_release): until then the slot reads as busy, so a packet of another
// chunk collides instead of claiming a slot whose later lanes are still being written.
#ifndef INA_TNA_SLOT_STATE_P4
#define INA_TNA_SLOT_STATE_P4

control SlotState(inout headers_t hdr, inout ig_meta_t md) {
    Register<bit<32>, bit<32>>(NUM_SLOTS, 0) slot_tag;
    Register<seq_t, bit<32>>(NUM_SLOTS, 0) slot_seq;
    Register<bitmap_t, bit<32>>(NUM_SLOTS, 0) slot_bitmap;
    Register<bit<8>, bit<32>>(NUM_SLOTS, 0) slot_count;

    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_acquire = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value < md.swap_bound) {
                value = md.tag;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_release = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value == hdr.recirc.release_tag) {
                value = 0;
            }
        }
    };

    RegisterAction<seq_t, bit<32>, seq_t>(slot_seq) seq_set = {
        void apply(inout seq_t value, out seq_t rv) {
            rv = value;
            value = hdr.ina.seq;
        }
    };
    RegisterAction<seq_t, bit<32>, seq_t>(slot_seq) seq_check = {
        void apply(inout seq_t value, out seq_t rv) {
            rv = value;
            if ((int<32>)(hdr.ina.seq - value) > 0) {
                value = hdr.ina.seq; // stale takeover by a newer seq of the same job
            }
        }
    };
    RegisterAction<seq_t, bit<32>, seq_t>(slot_seq) seq_read = {
        void apply(inout seq_t value, out seq_t rv) {
            rv = value;
        }
    };

    RegisterAction<bitmap_t, bit<32>, bitmap_t>(slot_bitmap) bitmap_set = {
        void apply(inout bitmap_t value, out bitmap_t rv) {
            rv = value;
            value = md.worker_bit;
        }
    };
    RegisterAction<bitmap_t, bit<32>, bitmap_t>(slot_bitmap) bitmap_or = {
        void apply(inout bitmap_t value, out bitmap_t rv) {
            rv = value;
            value = value | md.worker_bit;
        }
    };

    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_count) count_set_one = {
        void apply(inout bit<8> value) {
            value = 1;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_count) count_inc = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = value + 1;
            rv = value;
        }
    };

    // The packet leaves carrying the evicted owner (job and priority from its tag).
    action carry_owner(bit<16> flag) {
        hdr.ina.job_id = md.old_tag[15:0];
        hdr.ina.priority = md.old_tag[23:16];
        hdr.ina.seq = md.old_seq;
        hdr.ina.bitmap = md.old_bitmap;
        hdr.ina.flags = flag; // | the evicted owner's ECN/OVERFLOW, added by SlotValues
    }

    // A take or takeover: the slot now holds only this packet's identity and contribution.
    action restart() {
        md.old_bitmap = bitmap_set.execute(md.slot_index);
        count_set_one.execute(md.slot_index);
        md.state_op = STATE_SET;
    }

    apply {
        md.slot_index = (bit<32>)hdr.ina.slot;
        if (md.first_pass == 0) {
            // Later passes: the decision was taken on pass 0; the final pass frees the slot of a
            // completed (ESA) or flushed chunk, or of an ATP chunk whose result passed.
            if (hdr.recirc.passes_left == 0 && hdr.recirc.release_tag != 0) {
                tag_release.execute(md.slot_index);
            }
            return;
        }
        md.lane_index = md.slot_index; // pass 0
        md.lane_op = LANE_NONE;
        md.took = 0;
        md.same_job = 0;
        md.state_op = STATE_NONE;
        hdr.recirc.release_tag = 0;
        hdr.recirc.merge_state = 0;

        if (hdr.ina.pkt_type == INA_TYPE_RESULT) {
            // ATP mode: a result whose chunk still holds its slot frees it on a second pass.
            if (md.release_on_result == 1 && hdr.ina.slot < md.active_slots &&
                    hdr.ina.slot < NUM_SLOTS) {
                md.old_tag = tag_read.execute(md.slot_index);
                md.old_seq = seq_read.execute(md.slot_index);
                if (md.old_tag[24:24] == 1 && md.old_tag[15:0] == hdr.ina.job_id &&
                        md.old_seq == hdr.ina.seq) {
                    hdr.recirc.release_tag = md.old_tag;
                }
            }
            return;
        }

        bool resend = (hdr.ina.flags & FLAG_RESEND) != 0;
        md.egress_to = OUT_PS;
        if (md.ina_enabled == 0 || (hdr.ina.flags & FLAG_BYPASS) != 0) {
            md.event = EVENT_BYPASS;                                       // 1
            return;
        }
        if (md.fan_in == 1) {
            md.event = EVENT_COMPLETED;                                    // 2
            return;
        }

        md.tag = SLOT_BUSY | (bit<32>)hdr.ina.priority << 16 | (bit<32>)hdr.ina.job_id;
        md.swap_bound = md.preempt == 1 ? SLOT_BUSY | (bit<32>)hdr.ina.priority << 16
                                        : (bit<32>)SLOT_BUSY;
        md.state_bits = (hdr.ina.flags & FLAG_ECN) != 0 ? (bit<8>)SLOT_STATE_ECN : 8w0;
        if (resend) {
            md.old_tag = tag_read.execute(md.slot_index); // a RESEND never takes a slot
        } else {
            md.old_tag = tag_acquire.execute(md.slot_index);
            md.took = md.old_tag < md.swap_bound ? 1w1 : 1w0;
        }
        md.same_job = md.old_tag[24:24] == 1 && md.old_tag[15:0] == hdr.ina.job_id ? 1w1 : 1w0;

        if (md.took == 1) {
            md.old_seq = seq_set.execute(md.slot_index);
        } else if (md.same_job == 1 && !resend) {
            md.old_seq = seq_check.execute(md.slot_index);
        } else if (md.same_job == 1) {
            md.old_seq = seq_read.execute(md.slot_index);
        }
        bool mine = md.took == 0 && md.same_job == 1 && md.old_seq == hdr.ina.seq;
        bool newer = (int<32>)(hdr.ina.seq - md.old_seq) > 0;

        if (md.took == 1 && md.old_tag[24:24] == 0) {
            restart();                                                     // 3, claim
            md.lane_op = LANE_STORE;
            md.event = EVENT_CLAIMED;
            md.egress_to = OUT_DROP;
        } else if (md.took == 1) {
            restart();                                                     // 8, preemption
            md.lane_op = LANE_SWAP;
            md.event = EVENT_PREEMPTED;
            md.evicted = 1;
            md.evicted_job = md.old_tag[15:0];
            carry_owner(FLAG_PREEMPTED);
        } else if (mine) {
            md.old_bitmap = bitmap_or.execute(md.slot_index);
            bool has_bit = (md.old_bitmap & md.worker_bit) != 0;
            hdr.ina.bitmap = md.old_bitmap | md.worker_bit;
            if (resend) {                                                  // 4, flush
                md.lane_op = has_bit ? (bit<8>)LANE_LOAD : (bit<8>)LANE_ADD;
                md.state_op = STATE_OR;
                hdr.recirc.merge_state = 1;
                hdr.ina.flags = hdr.ina.flags | FLAG_FLUSHED;
                hdr.recirc.release_tag = md.old_tag;
                md.event = EVENT_FLUSHED;
            } else if (has_bit) {                                          // 4, duplicate
                md.event = EVENT_DUPLICATE;
                md.egress_to = OUT_DROP;
            } else {                                                       // 4, add
                md.lane_op = LANE_ADD;
                md.old_count = count_inc.execute(md.slot_index);           // the new count
                if (md.old_count >= md.fan_in) {
                    if (md.release_on_result == 1) {
                        md.state_bits = md.state_bits | SLOT_STATE_COMPLETE;
                    } else {
                        hdr.recirc.release_tag = md.old_tag;
                    }
                    md.state_op = STATE_OR;
                    hdr.recirc.merge_state = 1;
                    md.event = EVENT_COMPLETED;
                } else {
                    md.state_op = STATE_OR;
                    md.event = EVENT_AGGREGATED;
                    md.egress_to = OUT_DROP;
                }
            }
        } else if (resend) {
            md.event = EVENT_RESEND_FORWARDED;                             // 5
        } else if (md.same_job == 1 && newer) {
            restart();                                                     // 6, stale takeover
            md.lane_op = LANE_SWAP;
            md.event = EVENT_STALE;
            carry_owner(FLAG_STALE);
        } else {
            hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;                // 7, 8
            md.event = EVENT_COLLISION;
        }
    }
}

#endif // INA_TNA_SLOT_STATE_P4
