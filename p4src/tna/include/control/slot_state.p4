// SPDX-License-Identifier: Apache-2.0
// The slot state machine on Tofino: the decision pass of a member's data packet (and of a result
// in ATP mode). Each register is touched by exactly one RegisterAction per pass, and each
// register's update depends only on its own old value and on what earlier stages decided:
//
//   slot_tag    owner priority | held marker | owner job (define_tna.p4). Taken (claim or
//               preemption) when its old value is below swap_bound: 1 (free slots only) or, with
//               preemption on, p | marker | 0 (free, or held by a lower priority).
//   slot_seq    set on a take; a newer seq of the same job takes it over (stale rule). It answers
//               old seq - packet seq, so "same chunk" and "newer" are gateway tests of its output.
//   slot_bitmap set on a take or takeover; OR-ed with the worker bit when the slot is this chunk's.
//   slot_count  1 on a take or takeover; +1 for a new worker bit, answering "count >= fan_in".
// slot_state and the values live in LanePass, which runs on the lane passes; SlotTag frees the
// tag on a release pass after them. Until then the slot reads as busy, so a packet of another
// chunk collides instead of claiming a slot whose lanes are still being read.
//
// The stateful stages follow each other (TNA_STAGE_*): every gateway between them tests a field
// the previous stage wrote, and nothing else, so the decision is four stages long.
#ifndef INA_TNA_SLOT_STATE_P4
#define INA_TNA_SLOT_STATE_P4

// slot_tag and slot_seq are the Ingress's: SlotTag, SlotDecision and AtpRelease share them.

// Steps 1, 2 and the slot range of a member's data packet, and what it asks of slot_tag.
control SlotEntry(inout headers_t hdr, inout ig_meta_t md) {
    // slot_tag's layout is the INA header's own bits (version and type 0x11 of a data packet mark
    // the slot busy). The fields sit in containers of different sizes, and a stateful ALU takes
    // each input from one container, so an identity hash concatenates them into one.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) tag_hash;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) bound_hash;

    // The packet's tag, and the bound below which slot_tag is taken: 1 (free slots only) or, with
    // preemption on, p | marker | 0. Computed for every member's packet, beside slot_entry (an
    // action has 32 bits of hash output).
    action make_tag() {
        hdr.recirc.release_tag = tag_hash.get({hdr.ina.priority, hdr.ina.version, hdr.ina.pkt_type,
                                               hdr.ina.job_id});
    }
    action make_bound() {
        md.swap_bound = bound_hash.get({hdr.ina.priority, hdr.ina.version, hdr.ina.pkt_type, 16w0});
    }

    // Steps 1, 2 and the slot range, in one table: a gateway per test took a logical table each in
    // the stages before slot_tag.
    action bypass() {
        md.event = EVENT_BYPASS;
        hdr.recirc.egress_to = OUT_PS;
    }
    action single() {
        md.event = EVENT_COMPLETED;
        hdr.recirc.egress_to = OUT_PS;
    }
    action out_of_range() {
        md.event = EVENT_DROP_SLOT_RANGE;
        hdr.recirc.egress_to = OUT_DROP;
    }
    action touch(bit<8> state_bits, bit<2> tag_op) {
        md.touch = 1;
        md.tag_op = tag_op;
        hdr.recirc.egress_to = OUT_PS;
        hdr.recirc.state_bits = state_bits;
    }
    table slot_entry {
        key = {
            md.ina_enabled: ternary;
            hdr.ina.flags: ternary;
            md.fan_in: ternary;
            md.slot_room: ternary;
            hdr.ina.slot: ternary;
        }
        actions = { bypass; single; out_of_range; touch; }
        const entries = {
            (0, _, _, _, _): bypass();                                             // 1
            (_, FLAG_BYPASS &&& FLAG_BYPASS, _, _, _): bypass();                   // 1
            (_, _, 0 &&& 0xFE, _, _): single();                                    // 2 (and fan_in 0)
            (_, _, _, 0, _): out_of_range();                                       // slot >= active_slots
            // A RESEND never takes a slot: it only reads the tag.
            (_, FLAG_ECN | FLAG_RESEND &&& FLAG_ECN | FLAG_RESEND, _, _, 0 &&& 0xFC00): touch(TNA_STATE_ECN, TAG_LOOK);
            (_, FLAG_RESEND &&& FLAG_RESEND, _, _, 0 &&& 0xFC00): touch(0, TAG_LOOK);
            (_, FLAG_ECN &&& FLAG_ECN, _, _, 0 &&& 0xFC00): touch(TNA_STATE_ECN, TAG_TAKE);
            (_, _, _, _, 0 &&& 0xFC00): touch(0, TAG_TAKE);
        }
        default_action = out_of_range();                                           // slot >= NUM_SLOTS
        size = 8;
    }

    apply {
        make_tag();
        if (md.preempt == 1) {
            make_bound();
        } else {
            md.swap_bound = 1;
        }
        slot_entry.apply();
    }
}

// Every access to slot_tag, in one table: a decision pass takes or reads it, an ATP result reads
// it, and the release pass of a completed, flushed or ATP-released chunk frees it. (The tables of
// one register share a stage, and bf-p4c places the tables after an if-else after both branches:
// a release table on the lane passes pushed slot_tag behind the lanes.)
control SlotTag(inout headers_t hdr, inout ig_meta_t md)(Register<bit<32>, bit<32>> slot_tag) {
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
    // The release value is in hdr.recirc.release_tag, the input tag_acquire writes from (a
    // stateful ALU has two PHV inputs): a slot re-taken since is not freed.
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_release = {
        void apply(inout bit<32> value) {
            if (value == hdr.recirc.release_tag) {
                value = 0;
            }
        }
    };

    action take() {
        hdr.recirc.owner_tag = tag_acquire.execute(SLOT_INDEX);
    }
    action look() {
        hdr.recirc.owner_tag = tag_read.execute(SLOT_INDEX);
    }
    action free() {
        tag_release.execute(SLOT_INDEX);
    }
    @stage(TNA_STAGE_TAG) table tag_access {
        key = { md.tag_op: exact; }
        actions = { take; look; free; @defaultonly NoAction; }
        // As entries: an action addressing a register by hash cannot be the default.
        const entries = { TAG_TAKE: take(); TAG_LOOK: look(); TAG_RELEASE: free(); }
        default_action = NoAction();
        size = 4;
    }

    apply {
        tag_access.apply();
    }
}

// The decision after slot_tag: slot_seq, slot_bitmap, slot_count and what the lane passes do.
control SlotDecision(inout headers_t hdr, inout ig_meta_t md)(Register<seq_t, bit<32>> slot_seq) {
    Register<bitmap_t, bit<32>>(NUM_SLOTS, 0) slot_bitmap;
    Register<bit<32>, bit<32>>(NUM_SLOTS, 0) slot_count; // 32 bits: count_inc answers a 32-bit event

    // The seq actions answer old seq - packet seq: 0 is this chunk, and the packet's seq is newer
    // (int32(q - q') > 0) when the difference is negative and not -2^31.
    RegisterAction<seq_t, bit<32>, bit<32>>(slot_seq) seq_check = {
        void apply(inout seq_t value, out bit<32> rv) {
            rv = value - hdr.ina.seq;
            if ((int<32>)(hdr.ina.seq - value) > 0) {
                value = hdr.ina.seq; // stale takeover by a newer seq of the same job
            }
        }
    };
    RegisterAction<seq_t, bit<32>, bit<32>>(slot_seq) seq_compare = {
        void apply(inout seq_t value, out bit<32> rv) {
            rv = value - hdr.ina.seq;
        }
    };
    RegisterAction<seq_t, bit<32>, seq_t>(slot_seq) seq_set = {
        void apply(inout seq_t value, out seq_t rv) {
            rv = value;
            value = hdr.ina.seq;
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
    // fan_in after the add), else aggregated.
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

    // A claim, takeover or preemption: the slot now holds only this packet's contribution, and
    // the lanes swap it with whatever the slot held.
    action restart() {
        hdr.recirc.lane_op = LANE_SWAP;
        hdr.recirc.state_op = STATE_SET;
        hdr.recirc.merge_state = 1;
    }

    // The packet leaves carrying the evicted owner (its seq and bitmap are already in the header):
    // its job and priority are taken from owner_tag on lane pass 0 (in time for the final pass's
    // ina_ps lookup), and LanePass adds the owner's ECN/OVERFLOW on the last lane pass.
    action carry_owner(bit<16> flag) {
        hdr.recirc.carry_owner = 1;
        hdr.ina.flags = flag;
    }

    // The stateful tables, each pinned to its register's stage (define_tna.p4): left to itself,
    // bf-p4c placed slot_tag after the lane passes' tables and ran out of stages.
#define SALU_TABLE(name, at, stmt) \
    action do_##name() { stmt } \
    @stage(at) @hidden table name { actions = { do_##name; } default_action = do_##name(); size = 1; }
    // A RESEND does not take the slot over: it reads the seq.
    action seq_take_over() {
        md.seq_delta = seq_check.execute(SLOT_INDEX);
    }
    action seq_look() {
        md.seq_delta = seq_compare.execute(SLOT_INDEX);
    }
    @stage(TNA_STAGE_SEQ) table seq_access {
        key = { hdr.ina.flags: ternary; }
        actions = { seq_take_over; seq_look; @defaultonly NoAction; }
        default_action = NoAction();
        const entries = { FLAG_RESEND &&& FLAG_RESEND: seq_look(); 0 &&& FLAG_RESEND: seq_take_over(); }
        size = 2;
    }
    SALU_TABLE(seq_restart, TNA_STAGE_SEQ, hdr.ina.seq = seq_set.execute(SLOT_INDEX);)
    // The old bitmap answers "already added" and the bitmap the packet leaves with, in one action.
    SALU_TABLE(bitmap_add, TNA_STAGE_BITMAP,
               md.old_bitmap = bitmap_or.execute(SLOT_INDEX);
               md.has_bit = md.old_bitmap & md.worker_bit;
               hdr.ina.bitmap = md.old_bitmap | md.worker_bit;)
    SALU_TABLE(bitmap_restart_stale, TNA_STAGE_BITMAP, hdr.ina.bitmap = bitmap_set.execute(SLOT_INDEX);)
    SALU_TABLE(bitmap_restart, TNA_STAGE_BITMAP, hdr.ina.bitmap = bitmap_set.execute(SLOT_INDEX);)
    SALU_TABLE(count_add, TNA_STAGE_COUNT, md.event = count_inc.execute(SLOT_INDEX);)
    SALU_TABLE(count_restart_stale, TNA_STAGE_COUNT, count_set_one.execute(SLOT_INDEX);)
    SALU_TABLE(count_restart, TNA_STAGE_COUNT, count_set_one.execute(SLOT_INDEX);)
    // The stale partial's seq: old seq = packet seq + (old seq - packet seq).
    action stale_seq() {
        hdr.ina.seq = hdr.ina.seq + md.seq_delta;
    }

    // A member's data packet (JobLookup matched ina_worker).
    apply {
        // Held by this job: marker and job equal (one comparison; TAG_TOOK is bit 23).
        if (hdr.recirc.owner_tag[22:0] == hdr.recirc.release_tag[22:0]) {
            seq_access.apply();
            // A member's higher priority re-tags its own job's slot (see p4src/README.md): what
            // slot_tag holds now is what a release must match.
            if (hdr.recirc.owner_tag[23:23] == 0) {
                hdr.recirc.release_tag = hdr.recirc.owner_tag;
            }
            if (md.seq_delta == 0) {                                           // 4, (j, q) holds it
                bitmap_add.apply();
                hdr.recirc.state_op = STATE_OR;
                hdr.recirc.merge_state = 1;
                if (hdr.ina.flags[0:0] == 1) {                                 // 4, flush
                    if (md.has_bit == 0) {
                        hdr.recirc.lane_op = LANE_ADD;
                    } else {
                        hdr.recirc.lane_op = LANE_LOAD;
                    }
                    hdr.ina.flags = hdr.ina.flags | FLAG_FLUSHED;
                    hdr.recirc.release = 1;
                    md.event = EVENT_FLUSHED;
                } else if (md.has_bit != 0) {                                  // 4, duplicate
                    hdr.recirc.state_op = STATE_NONE;
                    hdr.recirc.merge_state = 0;
                    md.event = EVENT_DUPLICATE;
                    hdr.recirc.egress_to = OUT_DROP;
                } else {                                                       // 4, add
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
            } else if (hdr.ina.flags[0:0] == 1) {                              // 5
                md.event = EVENT_RESEND_FORWARDED;
            } else if (md.seq_delta[31:31] == 1 && md.seq_delta != 0x80000000) { // 6, stale takeover
                bitmap_restart_stale.apply();
                count_restart_stale.apply();
                stale_seq();
                restart();
                carry_owner(FLAG_STALE);
                md.event = EVENT_STALE;
            } else {                                                           // 7
                hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;
                md.event = EVENT_COLLISION;
            }
        } else if (hdr.recirc.owner_tag[23:23] == 1) {
            seq_restart.apply();
            bitmap_restart.apply();
            count_restart.apply();
            restart();
            if (hdr.recirc.owner_tag[16:16] == 0) {                            // 3, claim
                hdr.recirc.merge_state = 0;
                md.event = EVENT_CLAIMED;
                hdr.recirc.egress_to = OUT_DROP;
            } else {                                                           // 8, preemption
                carry_owner(FLAG_PREEMPTED);
                md.event = EVENT_PREEMPTED;
                md.evicted = 1;
            }
        } else if (hdr.ina.flags[0:0] == 1) {                                  // 5
            md.event = EVENT_RESEND_FORWARDED;
        } else {                                                               // 8, collision
            hdr.ina.flags = hdr.ina.flags | FLAG_COLLISION;
            md.event = EVENT_COLLISION;
        }
    }
}

// ATP mode: a result whose chunk still holds its slot frees it on a second pass (SlotTag releases
// the tag then).
control AtpRelease(inout headers_t hdr, inout ig_meta_t md)(Register<seq_t, bit<32>> slot_seq) {
    RegisterAction<seq_t, bit<32>, bit<32>>(slot_seq) seq_compare = {
        void apply(inout seq_t value, out bit<32> rv) {
            rv = value - hdr.ina.seq;
        }
    };
    SALU_TABLE(seq_read_result, TNA_STAGE_SEQ, md.seq_delta = seq_compare.execute(SLOT_INDEX);)

    // SlotTag read the tag (AtpEntry asked it to).
    apply {
        // Busy and job in gateways of their own; the seq compared by slot_seq.
        if (hdr.recirc.owner_tag[16:16] == 1) {
            if (hdr.recirc.owner_tag[15:0] == hdr.ina.job_id) {
                seq_read_result.apply();
                if (md.seq_delta == 0) {
                    hdr.recirc.release_tag = hdr.recirc.owner_tag;
                    hdr.recirc.release = 1;
                }
            }
        }
    }
}

#undef SALU_TABLE

#endif // INA_TNA_SLOT_STATE_P4
