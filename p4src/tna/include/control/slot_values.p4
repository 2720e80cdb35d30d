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
    RegisterAction<value_t, bit<32>, bit<32>>(slot_value_##i) lane_swap_##i = { \
        void apply(inout value_t value, out bit<32> rv) { rv = (bit<32>)value; value = (value_t)hdr.lanes.h##i; } }; \
    RegisterAction<value_t, bit<32>, bit<32>>(slot_value_##i) lane_add_##i = { \
        void apply(inout value_t value, out bit<32> rv) { value = value |+| (value_t)hdr.lanes.h##i; rv = (bit<32>)value; } }; \
    RegisterAction<value_t, bit<32>, bit<32>>(slot_value_##i) lane_load_##i = { \
        void apply(inout value_t value, out bit<32> rv) { rv = (bit<32>)value; } };

// One table per lane, keyed on the lane operation: an action may drive only one stateful ALU
// that writes the packet.
#define LANE_TABLE(i, st) \
    action swap_##i() { hdr.lanes.h##i = lane_swap_##i.execute(md.lane_index); } \
    action add_##i() { hdr.lanes.h##i = lane_add_##i.execute(md.lane_index); } \
    action load_##i() { hdr.lanes.h##i = lane_load_##i.execute(md.lane_index); } \
    @stage(st) table lane_##i { \
        key = { hdr.recirc.lane_op: exact; } \
        actions = { swap_##i; add_##i; load_##i; @defaultonly NoAction; } \
        const entries = { LANE_SWAP: swap_##i(); LANE_ADD: add_##i(); LANE_LOAD: load_##i(); } \
        default_action = NoAction(); \
        size = 4; \
    }

// After an add, a lane that returned INT32_MAX or INT32_MIN clipped: a stateful ALU returns one
// value, so the wrapping sum cannot be compared as on BMv2. A sum that lands exactly on a bound is
// flagged too; the PS then sums that chunk on its exact path, so no result is ever wrong. One
// ternary table over all the lanes (64 bytes of key, within a stage's ternary crossbar), so one
// stage writes hdr.recirc.clipped; it runs only after adds.
#define CLIP_KEY(i) hdr.lanes.h##i: ternary @name(INA_STR(h##i));

#define INA_STR(x) #x
// Lane i at a bound: two entries per lane, 16 lanes per table.
#define CLIP_TABLE(name, FOREACH) \
    table name { \
        key = { FOREACH(CLIP_KEY) } \
        actions = { clip; @defaultonly NoAction; } \
        const entries = { \
            (CLIP_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (CLIP_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, CLIP_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, CLIP_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, CLIP_MAX, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, CLIP_MIN, _, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, CLIP_MAX, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, CLIP_MIN, _, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, CLIP_MAX, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, CLIP_MIN, _, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, CLIP_MAX, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, CLIP_MIN, _, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, CLIP_MAX, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, CLIP_MIN, _, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, CLIP_MAX, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, CLIP_MIN, _, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, CLIP_MAX, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, CLIP_MIN, _, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, CLIP_MAX, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, CLIP_MIN, _, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, CLIP_MAX, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, CLIP_MIN, _, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, CLIP_MAX, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, CLIP_MIN, _, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, CLIP_MAX, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, CLIP_MIN, _, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MAX, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MIN, _, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MAX, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MIN, _): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MAX): clip(); \
            (_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, CLIP_MIN): clip(); \
        } \
        default_action = NoAction(); \
        size = 32; \
    }
#define CLIP_MAX 32w0x7FFFFFFF
#define CLIP_MIN 32w0x80000000
#define APPLY_LANE(i) lane_##i.apply();

// A lane pass (a recirculated packet).
control LanePass(inout headers_t hdr, inout ig_meta_t md) {
    // The lane index (lane pass, slot) is a concatenation, which a hash builds in one step.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) lane_hash;
    action index_lane() {
        md.lane_index = lane_hash.get({hdr.recirc.pass[1:0], hdr.ina.slot[9:0]});
    }

    // A clip on any lane pass sets the OVERFLOW bit the last lane pass ORs into slot_state.
    action clip() {
        hdr.recirc.clipped = 1;
        hdr.recirc.state_bits = hdr.recirc.state_bits | TNA_STATE_OVERFLOW;
    }

    INA_FOREACH_LANE(DECLARE_LANE)
    TNA_LANE_STAGES(LANE_TABLE)

    CLIP_TABLE(clip_check, INA_FOREACH_CLIP_0)
#if TNA_LANES == 32
    CLIP_TABLE(clip_check_hi, INA_FOREACH_CLIP_1)
#endif

    apply {
        md.event = EVENT_OVERFLOW; // counted on the last lane pass if an add clipped (EventCounting)
        index_lane();
        INA_FOREACH_LANE(APPLY_LANE)
        if (hdr.recirc.lane_op == LANE_ADD) {
            clip_check.apply();
#if TNA_LANES == 32
            clip_check_hi.apply();
#endif
        }
        // Lane pass 0 of an evicted partial: the packet takes the owner's job and priority, in
        // time for the final pass's ina_ps lookup (after the lanes: it shares their container).
        if (hdr.recirc.pass == 0 && hdr.recirc.carry_owner == 1) {
            hdr.ina.job_id = hdr.recirc.owner_tag[15:0];
            hdr.ina.priority = hdr.recirc.owner_tag[31:24];
        }
    }
}

// slot_state on the last lane pass: the slot's state, and the flags the packet leaves with. Applied
// after the lane pass's if-else (bf-p4c places what follows an if-else after both branches), so it
// shares its stage with the counters and forwarding.
control SlotState(inout headers_t hdr, inout ig_meta_t md) {
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
            value = value | hdr.recirc.state_bits;
            rv = value & TNA_STATE_FLAGS;
        }
    };

    // The flags a packet carrying a sum or an evicted partial leaves with take the state's
    // ECN/OVERFLOW from the stateful ALU's output in the same action.
    action set_state() {
        md.state_flags = state_set.execute(SLOT_INDEX);
    }
    action set_state_merge() {
        md.state_flags = state_set.execute(SLOT_INDEX);
        hdr.ina.flags = hdr.ina.flags | (bit<16>)md.state_flags;
    }
    action or_state() {
        md.state_flags = state_or.execute(SLOT_INDEX);
    }
    action or_state_merge() {
        md.state_flags = state_or.execute(SLOT_INDEX);
        hdr.ina.flags = hdr.ina.flags | (bit<16>)md.state_flags;
    }
    table slot_state_access {
        key = {
            hdr.recirc.state_op: exact;
            hdr.recirc.merge_state: exact;
        }
        actions = { set_state; set_state_merge; or_state; or_state_merge; @defaultonly NoAction; }
        const entries = {
            (STATE_SET, 0): set_state();
            (STATE_SET, 1): set_state_merge();
            (STATE_OR, 0): or_state();
            (STATE_OR, 1): or_state_merge();
        }
        default_action = NoAction();
        size = 4;
    }

    apply {
        slot_state_access.apply();
    }
}

#undef DECLARE_LANE
#undef LANE_TABLE
#undef CLIP_KEY
#undef APPLY_LANE
#undef INA_STR
#undef CLIP_TABLE
#undef CLIP_MAX
#undef CLIP_MIN

#endif // INA_TNA_SLOT_VALUES_P4
