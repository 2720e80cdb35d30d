// SPDX-License-Identifier: Apache-2.0
// The value lanes and slot_state. On pass p, lane i sums value p * TNA_LANES + i in register
// slot_value_<i> at index p * NUM_SLOTS + slot. Every packet that touches a slot takes all
// TNA_PASSES passes through the one recirculation port, so on every lane the operations of
// different packets happen in the order their first passes did.
#ifndef INA_TNA_SLOT_VALUES_P4
#define INA_TNA_SLOT_VALUES_P4

// ECN/OVERFLOW flags carried out of a slot whose state is st.
bit<16> state_flags(in bit<8> st) {
    return ((st & SLOT_STATE_ECN) != 0 ? (bit<16>)FLAG_ECN : 16w0) |
           ((st & SLOT_STATE_OVERFLOW) != 0 ? (bit<16>)FLAG_OVERFLOW : 16w0);
}

// One register and four RegisterActions per lane. An add that returns INT32_MAX or INT32_MIN is
// taken as clipped: a stateful ALU returns one value, so the wrapping sum cannot be compared as
// on BMv2. A sum that lands exactly on a bound is flagged too; the PS then sums that chunk on its
// exact path, so no result is ever wrong.
#define DECLARE_LANE(i) \
    Register<value_t, bit<32>>(NUM_SLOTS * TNA_PASSES, 0) slot_value_##i; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_store_##i = { \
        void apply(inout value_t value) { value = md.lane_##i; } }; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_add_##i = { \
        void apply(inout value_t value, out value_t rv) { value = value |+| md.lane_##i; rv = value; } }; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_swap_##i = { \
        void apply(inout value_t value, out value_t rv) { rv = value; value = md.lane_##i; } }; \
    RegisterAction<value_t, bit<32>, value_t>(slot_value_##i) lane_load_##i = { \
        void apply(inout value_t value, out value_t rv) { rv = value; } };

#define RUN_LANE(i) \
    if (md.lane_op == LANE_STORE) { \
        lane_store_##i.execute(md.lane_index); \
    } else if (md.lane_op == LANE_ADD) { \
        md.lane_##i = lane_add_##i.execute(md.lane_index); \
        if ((bit<32>)md.lane_##i == INT32_MAX || (bit<32>)md.lane_##i == INT32_MIN) { \
            md.clipped = 1; \
        } \
    } else if (md.lane_op == LANE_SWAP) { \
        md.lane_##i = lane_swap_##i.execute(md.lane_index); \
    } else if (md.lane_op == LANE_LOAD) { \
        md.lane_##i = lane_load_##i.execute(md.lane_index); \
    }

#define COPY_IN(lane, v) md.lane_##lane = hdr.ina_values.v##v;
#define COPY_OUT(lane, v) hdr.ina_values.v##v = md.lane_##lane;

control SlotValues(inout headers_t hdr, inout ig_meta_t md) {
    Register<bit<8>, bit<32>>(NUM_SLOTS, 0) slot_state;
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_state) state_set = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            value = md.state_bits;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_state) state_or = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            value = value | md.state_bits;
        }
    };

    INA_FOREACH_LANE(DECLARE_LANE)

    action copy_in_0() { INA_LANES_OF_PASS_0(COPY_IN) }
    action copy_in_1() { INA_LANES_OF_PASS_1(COPY_IN) }
    action copy_in_2() { INA_LANES_OF_PASS_2(COPY_IN) }
    action copy_in_3() { INA_LANES_OF_PASS_3(COPY_IN) }
    action copy_out_0() { INA_LANES_OF_PASS_0(COPY_OUT) }
    action copy_out_1() { INA_LANES_OF_PASS_1(COPY_OUT) }
    action copy_out_2() { INA_LANES_OF_PASS_2(COPY_OUT) }
    action copy_out_3() { INA_LANES_OF_PASS_3(COPY_OUT) }

    apply {
        bit<8> pass = hdr.recirc.pass;
        md.lane_index = ((bit<32>)pass << 10) + md.slot_index; // pass * NUM_SLOTS
        md.clipped = hdr.recirc.clipped;
        if (pass == 0) { copy_in_0(); } else if (pass == 1) { copy_in_1(); }
        else if (pass == 2) { copy_in_2(); } else { copy_in_3(); }

        INA_FOREACH_LANE(RUN_LANE)

        if (pass == 0) { copy_out_0(); } else if (pass == 1) { copy_out_1(); }
        else if (pass == 2) { copy_out_2(); } else { copy_out_3(); }
        hdr.recirc.clipped = md.clipped;

        bit<8> old_state = 0;
        if (md.state_op == STATE_SET) {
            old_state = state_set.execute(md.slot_index);
            // The evicted owner's partial leaves with that owner's ECN/OVERFLOW.
            hdr.ina.flags = hdr.ina.flags | state_flags(old_state);
        } else if (md.state_op == STATE_OR) {
            state_or.execute(md.slot_index);
        } else if (hdr.recirc.passes_left == 0 && md.lane_op != LANE_NONE) {
            // Final pass: record a clip, and give a completed or flushed sum the slot's flags.
            md.state_bits = md.clipped == 1 ? (bit<8>)SLOT_STATE_OVERFLOW : 8w0;
            old_state = state_or.execute(md.slot_index);
            if (hdr.recirc.merge_state == 1) {
                hdr.ina.flags = hdr.ina.flags | state_flags(old_state | md.state_bits);
            }
        }
    }
}

#undef DECLARE_LANE
#undef RUN_LANE
#undef COPY_IN
#undef COPY_OUT

#endif // INA_TNA_SLOT_VALUES_P4
