// SPDX-License-Identifier: Apache-2.0
// The value lanes and slot_state, on the lane passes. On lane pass p (0..TNA_PASSES-1), lane i
// sums value p * TNA_LANES + i, which the parser put in hdr.lanes.h<i>, in register slot_value_<i>
// at index p * NUM_SLOTS + slot. Every packet that touches a slot takes all its passes through the
// one recirculation port, so on every lane the operations of different packets happen in the
// order their decision passes did.
#ifndef INA_TNA_SLOT_VALUES_P4
#define INA_TNA_SLOT_VALUES_P4

// One register and three RegisterActions per lane (a claim is a swap whose output is dropped with
// the packet).
#define DECLARE_LANE(i) \
    Register<value_t, bit<32>>(NUM_SLOTS * TNA_PASSES, 0) slot_value_##i; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_swap_##i = { \
        void apply(inout value_t value, out value_t rv) { rv = value; value = hdr.lanes.h##i; } }; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_add_##i = { \
        void apply(inout value_t value, out value_t rv) { value = value |+| hdr.lanes.h##i; rv = value; } }; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_load_##i = { \
        void apply(inout value_t value, out value_t rv) { rv = value; } };

// One table per lane, keyed on the lane operation: an action may drive only one stateful ALU
// that writes the packet.
#define LANE_TABLE(i) \
    action swap_##i() { hdr.lanes.h##i = lane_swap_##i.execute(md.lane_index); } \
    action add_##i() { hdr.lanes.h##i = lane_add_##i.execute(md.lane_index); } \
    action load_##i() { hdr.lanes.h##i = lane_load_##i.execute(md.lane_index); } \
    table lane_##i { \
        key = { hdr.recirc.lane_op: exact; } \
        actions = { swap_##i; add_##i; load_##i; @defaultonly NoAction; } \
        const entries = { LANE_SWAP: swap_##i(); LANE_ADD: add_##i(); LANE_LOAD: load_##i(); } \
        default_action = NoAction(); \
        size = 4; \
    }

// After an add, a lane that returned INT32_MAX or INT32_MIN clipped: a stateful ALU returns one
// value, so the wrapping sum cannot be compared as on BMv2. A sum that lands exactly on a bound is
// flagged too; the PS then sums that chunk on its exact path, so no result is ever wrong. One
// ternary table over all the lanes, so one stage writes hdr.recirc.clipped.
#define CLIP_KEY(i) (bit<32>)hdr.lanes.h##i: ternary @name(INA_STR(h##i));

#define INA_STR(x) #x
#define APPLY_LANE(i) lane_##i.apply();

// A lane pass (a recirculated packet). slot_tag is the Ingress's: SlotDecision takes it on the
// decision pass, this releases it on the final pass.
control LanePass(inout headers_t hdr, inout ig_meta_t md)(Register<bit<32>, bit<32>> slot_tag) {
    // The release value is in hdr.recirc.release_tag, the input tag_acquire writes from (a
    // stateful ALU has two PHV inputs).
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_tag) tag_release = {
        void apply(inout bit<32> value) {
            if (value == hdr.recirc.release_tag) {
                value = 0;
            }
        }
    };

    // Both answer the ECN/OVERFLOW flags the packet leaves with: the evicted owner's (set), or
    // the sum's after this packet (or), a clip included.
    Register<bit<8>, bit<32>>(NUM_SLOTS, 0) slot_state;
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_state) state_set = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value & TNA_STATE_FLAGS;
            value = hdr.recirc.state_bits;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_state) state_or = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if (hdr.recirc.clipped == 1) {
                value = value | hdr.recirc.state_bits | TNA_STATE_OVERFLOW;
            } else {
                value = value | hdr.recirc.state_bits;
            }
            rv = value & TNA_STATE_FLAGS;
        }
    };

    // The lane index (lane pass, slot) is a concatenation, which a hash builds in one step.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) lane_hash;
    action index_lane() {
        md.lane_index = lane_hash.get({hdr.recirc.pass[1:0], hdr.ina.slot[9:0]});
    }

    action clip() {
        hdr.recirc.clipped = 1;
    }

    INA_FOREACH_LANE(DECLARE_LANE)
    INA_FOREACH_LANE(LANE_TABLE)

    table clip_check {
        key = {
            hdr.recirc.lane_op: exact;
            INA_FOREACH_LANE(CLIP_KEY)
        }
        actions = { clip; @defaultonly NoAction; }
        // Lane i at a bound: two entries per lane (written out for TNA_LANES = 16).
        const entries = {
            (LANE_ADD, INT32_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, INT32_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, INT32_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, INT32_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, INT32_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, INT32_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, INT32_MAX, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, INT32_MIN, _, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, INT32_MAX, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, INT32_MIN, _, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, INT32_MAX, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, INT32_MIN, _, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, INT32_MAX, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, INT32_MIN, _, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, INT32_MAX, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, INT32_MIN, _, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, INT32_MAX, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, INT32_MIN, _, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, INT32_MAX, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, INT32_MIN, _, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, INT32_MAX, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, INT32_MIN, _, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, INT32_MAX, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, INT32_MIN, _, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MAX, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MIN, _, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MAX, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MIN, _, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MAX, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MIN, _): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MAX): clip();
            (LANE_ADD, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, INT32_MIN): clip();
        }
        default_action = NoAction();
        size = 2 * TNA_LANES;
    }

    action do_tag_release() {
        tag_release.execute(md.slot_index);
    }
    // slot_tag's stage, as SlotDecision's tag tables (define_tna.p4).
    @stage(TNA_STAGE_TAG) @hidden table tag_release_t {
        actions = { do_tag_release; } default_action = do_tag_release(); size = 1;
    }

    apply {
        // The final pass frees the slot of a completed (ESA) or flushed chunk, or of an ATP chunk
        // whose result passed (its second pass has no lanes).
        if ((hdr.recirc.pass == TNA_PASSES - 1 || hdr.recirc.lane_op == LANE_NONE) &&
                hdr.recirc.release == 1) {
            tag_release_t.apply();
        }
        if (hdr.recirc.lane_op == LANE_NONE) {
            return;
        }
        index_lane();
        INA_FOREACH_LANE(APPLY_LANE)
        clip_check.apply();
        // Lane pass 0 of an evicted partial: the packet takes the owner's job and priority, in
        // time for the final pass's ina_ps lookup (after the lanes: it shares their container).
        if (hdr.recirc.pass == 0 && hdr.recirc.carry_owner == 1) {
            hdr.ina.job_id = hdr.recirc.owner_tag[15:0];
            hdr.ina.priority = hdr.recirc.owner_tag[31:24];
        }
        if (hdr.recirc.pass == TNA_PASSES - 1) {
            // Final pass: the slot's state, and the flags the packet leaves with.
            md.state_flags = 0;
            if (hdr.recirc.state_op == STATE_SET) {
                md.state_flags = state_set.execute(md.slot_index);
            } else if (hdr.recirc.state_op == STATE_OR) {
                md.state_flags = state_or.execute(md.slot_index);
            }
            if (hdr.recirc.merge_state == 1) {
                hdr.ina.flags = hdr.ina.flags | (bit<16>)md.state_flags;
            }
        }
    }
}

#undef DECLARE_LANE
#undef LANE_TABLE
#undef CLIP_KEY
#undef APPLY_LANE
#undef INA_STR

#endif // INA_TNA_SLOT_VALUES_P4
