// SPDX-License-Identifier: Apache-2.0
// The slot state machine on Tofino: the decision pass of a worker's data packet (and of a result
// in ATP mode), and the tag release on the final pass. Each register is touched by exactly one
// RegisterAction per pass, and each register's update depends only on its own old value and on
// what earlier stages decided:
//
//   slot_tag    owner priority | held marker | owner job (define_tna.p4). Taken (claim or
//               preemption) when its old value is below swap_bound: 1 (free slots only) or, with
//               preemption on, p | marker | 0 (free, or held by a lower priority).
//   slot_seq    set on a take; a newer seq of the same job takes it over (stale rule).
//   slot_bitmap set on a take or takeover; OR-ed with the worker bit when the slot is this chunk's.
//   slot_count  1 on a take or takeover; +1 for a new worker bit, answering "count >= fan_in".
// slot_state and the values live in SlotValues, which runs on the lane passes.
//
// A slot is free when slot_tag's busy bit is clear. Completion (ESA) and flush clear it on the
// packet's final pass (tag_release): until then the slot reads as busy, so a packet of another
// chunk collides instead of claiming a slot whose lanes are still being read.
#ifndef INA_TNA_SLOT_STATE_P4
#define INA_TNA_SLOT_STATE_P4

// slot_tag is the Ingress's: LanePass releases it on the final pass.
control SlotDecision(inout headers_t hdr, inout ig_meta_t md)(Register<bit<32>, bit<32>> slot_tag) {
    Register<seq_t, bit<32>>(NUM_SLOTS, 0) slot_seq;
    Register<bitmap_t, bit<32>>(NUM_SLOTS, 0) slot_bitmap;
    Register<bit<32>, bit<32>>(NUM_SLOTS, 0) slot_count; // 32 bits: count_inc answers a 32-bit event

    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_acquire = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (value < md.swap_bound) {
                rv = value | TAG_TOOK;
                value = hdr.recirc.release_tag; // this packet's tag (make_tag)
            } else {
                rv = value & ~(bit<32>)TAG_TOOK; // the same ALU output as the other branch
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_read = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
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

    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_count) count_set_one = {
        void apply(inout bit<32> value) {
            value = 1;
        }
    };
    // Answers the packet's event: completed when this contribution completes the chunk (count >=
    // fan_in after the add), else aggregated; the event is then known one stage earlier.
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_count) count_inc = {
        void apply(inout bit<32> value, out bit<32> rv) {
            if (value + 1 >= (bit<32>)md.fan_in) {
                rv = EVENT_COMPLETED;
            } else {
                rv = EVENT_AGGREGATED;
            }
            value = value + 1;
        }
    };

    // slot_tag's layout is the INA header's own bits (version and type 0x11 of a data packet mark
    // the slot busy). The fields sit in containers of different sizes, and a stateful ALU takes
    // each input from one container, so an identity hash concatenates them into one.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) tag_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) bound_hash;
    action make_tag() {
        hdr.recirc.release_tag = tag_hash.get({hdr.ina.priority, hdr.ina.version, hdr.ina.pkt_type,
                                               hdr.ina.job_id});
    }
    action make_bound() {
        md.swap_bound = bound_hash.get({hdr.ina.priority, hdr.ina.version, hdr.ina.pkt_type, 16w0});
    }

    // The packet leaves carrying the evicted owner: its job and priority are taken from
    // owner_tag on lane pass 0 (in time for the final pass's ina_ps lookup), and SlotValues adds
    // the owner's ECN/OVERFLOW on the final pass.
    action carry_owner(bit<16> flag) {
        hdr.recirc.carry_owner = 1;
        hdr.ina.seq = md.old_seq;
        hdr.ina.bitmap = md.old_bitmap;
        hdr.ina.flags = flag;
    }

    // A claim, takeover or preemption: the slot now holds only this packet's contribution, and
    // the lanes swap it with whatever the slot held.
    action restart() {
        hdr.recirc.lane_op = LANE_SWAP;
        hdr.recirc.state_op = STATE_SET;
        hdr.recirc.merge_state = 1;
    }


    // has_bit and the merged bitmap in their own table, so a gateway tests the stored has_bit.
    action merge_bitmap() {
        md.has_bit = md.old_bitmap & md.worker_bit;
        hdr.ina.bitmap = md.old_bitmap | md.worker_bit;
    }
    @hidden table bitmap_merge {
        actions = { merge_bitmap; } default_action = merge_bitmap(); size = 1;
    }

    // seq - old seq in its own table, so gateways test the stored difference.
    action diff_seq() {
        md.seq_delta = hdr.ina.seq - md.old_seq;
    }
    @hidden table seq_compare {
        actions = { diff_seq; } default_action = diff_seq(); size = 1;
    }

    // Each stateful operation is a table of its own, pinned to its register's stage (define_tna.p4):
    // left to itself, bf-p4c placed slot_tag after the lane passes' tables and ran out of stages.
#define SALU_TABLE(name, at, stmt) \
    action do_##name() { stmt } \
    @stage(at) @hidden table name { actions = { do_##name; } default_action = do_##name(); size = 1; }
    SALU_TABLE(tag_read_result, TNA_STAGE_TAG, hdr.recirc.owner_tag = tag_read.execute(md.slot_index);)
    SALU_TABLE(seq_read_result, TNA_STAGE_SEQ, md.old_seq = seq_read.execute(md.slot_index);)
    SALU_TABLE(tag_read_resend, TNA_STAGE_TAG, hdr.recirc.owner_tag = tag_read.execute(md.slot_index);)
    SALU_TABLE(tag_take, TNA_STAGE_TAG, hdr.recirc.owner_tag = tag_acquire.execute(md.slot_index);)
    SALU_TABLE(seq_read_resend, TNA_STAGE_SEQ, md.old_seq = seq_read.execute(md.slot_index);)
    SALU_TABLE(seq_take_over, TNA_STAGE_SEQ, md.old_seq = seq_check.execute(md.slot_index);)
    SALU_TABLE(bitmap_add, TNA_STAGE_BITMAP, md.old_bitmap = bitmap_or.execute(md.slot_index);)
    SALU_TABLE(count_add, TNA_STAGE_COUNT, md.event = count_inc.execute(md.slot_index);)
    SALU_TABLE(bitmap_restart_stale, TNA_STAGE_BITMAP, md.old_bitmap = bitmap_set.execute(md.slot_index);)
    SALU_TABLE(count_restart_stale, TNA_STAGE_COUNT, count_set_one.execute(md.slot_index);)
    SALU_TABLE(seq_restart, TNA_STAGE_SEQ, md.old_seq = seq_set.execute(md.slot_index);)
    SALU_TABLE(bitmap_restart, TNA_STAGE_BITMAP, md.old_bitmap = bitmap_set.execute(md.slot_index);)
    SALU_TABLE(count_restart, TNA_STAGE_COUNT, count_set_one.execute(md.slot_index);)
#undef SALU_TABLE

    apply {
        if ((md.event == EVENT_NONE && md.role == ROLE_WORKER) ||
                (md.event == EVENT_RESULT && md.release_on_result == 1)) {
            if (hdr.ina.pkt_type == INA_TYPE_RESULT) {
                // ATP mode: a result whose chunk still holds its slot frees it on a second pass.
                if (md.slot_room == 0 || hdr.ina.slot[15:10] != 0) {
                    return;
                }
                tag_read_result.apply();
                // Busy and job in gateways of their own; the seq compared field to field.
                if (hdr.recirc.owner_tag[16:16] == 1) {
                    if (hdr.recirc.owner_tag[15:0] == hdr.ina.job_id) {
                        seq_read_result.apply();
                        if (md.old_seq == hdr.ina.seq) {
                            hdr.recirc.release_tag = hdr.recirc.owner_tag;
                            hdr.recirc.release = 1;
                        }
                    }
                }
                return;
            } else {
                hdr.recirc.egress_to = OUT_PS;
                if (md.ina_enabled == 0 || hdr.ina.flags[4:4] == 1) {         // 1, BYPASS
                    md.event = EVENT_BYPASS;
                    return;
                }
                if (md.fan_in[7:1] == 0) {                                     // 2 (and fan_in 0)
                    md.event = EVENT_COMPLETED;
                    return;
                }
                if (md.slot_room == 0 || hdr.ina.slot[15:10] != 0) {           // slot < NUM_SLOTS
                    md.event = EVENT_DROP_SLOT_RANGE;
                    hdr.recirc.egress_to = OUT_DROP;
                    return;
                }
                if (hdr.ina.flags[6:6] == 1) {
                    hdr.recirc.state_bits = TNA_STATE_ECN;
                }
                make_tag();
                if (md.preempt == 1) {
                    make_bound();
                } else {
                    md.swap_bound = 1; // free slots only
                }
                if (hdr.ina.flags[0:0] == 1) {
                    tag_read_resend.apply();
                    // a RESEND never takes a slot
                } else {
                    tag_take.apply();
                }
            }

            // Held by this job: marker and job equal (one comparison; TAG_TOOK is bit 23).
            if (hdr.recirc.owner_tag[22:0] == hdr.recirc.release_tag[22:0]) {
                if (hdr.ina.flags[0:0] == 1) {
                    seq_read_resend.apply();
                } else {
                    seq_take_over.apply();
                }
                seq_compare.apply();
                // Held by this job. A member's higher priority re-tags it (see p4src/README.md): what
                // slot_tag holds now is what a release must match.
                if (hdr.recirc.owner_tag[23:23] == 0) {
                    // Not re-tagged: slot_tag still holds the owner's tag (its priority may be
                    // lower than this packet's); re-tagged, it holds this packet's.
                    hdr.recirc.release_tag = hdr.recirc.owner_tag;
                }
                if (md.old_seq == hdr.ina.seq) {                               // 4, (j, q) holds it
                    bitmap_add.apply();
                    bitmap_merge.apply();
                    hdr.recirc.state_op = STATE_OR;
                    hdr.recirc.merge_state = 1;
                    if (hdr.ina.flags[0:0] == 1) {                             // 4, flush
                        if (md.has_bit == 0) {
                            hdr.recirc.lane_op = LANE_ADD;
                        } else {
                            hdr.recirc.lane_op = LANE_LOAD;
                        }
                        hdr.ina.flags = hdr.ina.flags | FLAG_FLUSHED;
                        hdr.recirc.release = 1;
                        md.event = EVENT_FLUSHED;
                    } else if (md.has_bit != 0) {                              // 4, duplicate
                        hdr.recirc.state_op = STATE_NONE;
                        hdr.recirc.merge_state = 0;
                        md.event = EVENT_DUPLICATE;
                        hdr.recirc.egress_to = OUT_DROP;
                    } else {                                                   // 4, add
                        hdr.recirc.lane_op = LANE_ADD;
                        count_add.apply();
                        if (md.event == EVENT_AGGREGATED) {
                            hdr.recirc.merge_state = 0;
                            hdr.recirc.egress_to = OUT_DROP;
                        } else if (md.release_on_result == 1) {
                            hdr.recirc.state_bits = hdr.recirc.state_bits | TNA_STATE_COMPLETE;
                        } else {
                            hdr.recirc.release = 1;
                        }
                    }
                } else if (hdr.ina.flags[0:0] == 1) {                          // 5
                    md.event = EVENT_RESEND_FORWARDED;
                } else if (md.seq_delta[31:31] == 0) {                         // 6, stale takeover
                    bitmap_restart_stale.apply();
                    count_restart_stale.apply();
                    restart();
                    carry_owner(FLAG_STALE);
                    md.event = EVENT_STALE;
                } else {                                                       // 7
                    hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;
                    md.event = EVENT_COLLISION;
                }
            } else if (hdr.recirc.owner_tag[23:23] == 1) {
                seq_restart.apply();
                bitmap_restart.apply();
                count_restart.apply();
                restart();
                if (hdr.recirc.owner_tag[16:16] == 0) {                                  // 3, claim
                    hdr.recirc.merge_state = 0;
                    md.event = EVENT_CLAIMED;
                    hdr.recirc.egress_to = OUT_DROP;
                } else {                                                       // 8, preemption
                    carry_owner(FLAG_PREEMPTED);
                    md.event = EVENT_PREEMPTED;
                    md.evicted = 1;
                }
            } else if (hdr.ina.flags[0:0] == 1) {                              // 5
                md.event = EVENT_RESEND_FORWARDED;
            } else {                                                           // 8, collision
                hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;
                md.event = EVENT_COLLISION;
            }
        }
    }
}

#endif // INA_TNA_SLOT_STATE_P4
