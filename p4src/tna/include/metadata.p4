// SPDX-License-Identifier: Apache-2.0
// TNA headers and metadata. Unlike v1model, nothing survives from ingress to egress or from one
// pass to the next unless it is in a header: ina_bridge_t carries what egress needs, and
// ina_recirc_t carries the slot decision between the passes of one packet.
#ifndef INA_TNA_METADATA_P4
#define INA_TNA_METADATA_P4

#include "../../header.p4"

// Prepended by the ingress deparser to every packet that goes through egress.
header ina_bridge_t {
    bit<7>  pad;
    bit<1>  ina_data;       // an INA data packet: egress may mark ECN
    bit<5>  pad2;
    bit<19> ecn_threshold;
}

// Prepended to a packet sent to INA_RECIRC_PORT; parsed before Ethernet on the next pass.
header ina_recirc_t {
    bit<8>   pass;          // 1 .. TNA_PASSES-1 on the recirculated passes
    bit<8>   passes_left;   // 0 on the final pass
    bit<8>   lane_op;       // LANE_*
    bit<8>   egress_to;           // OUT_* once the final pass is done
    bit<32>  release_tag;   // slot_tag value to clear on the final pass (0 = none)
    bit<16>  count_job;     // job whose `overflow` event a clip counts
    bit<16>  mcast_group;   // an ATP result's group, for its second pass
    bit<6>   pad;
    bit<1>   merge_state;   // the final pass ORs slot_state's ECN/OVERFLOW into the flags
    bit<1>   clipped;       // a lane clipped on an earlier pass
}

struct headers_t {
    ina_bridge_t bridge;
    ina_recirc_t recirc;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    udp_t        udp;
    ina_t        ina;
    ina_values_t ina_values;
}

#define LANE_FIELD(i) value_t lane_##i;

struct ig_meta_t {
    bit<1>      is_ina;
    bit<8>      event;
    bit<1>      job_known;
    job_id_t    event_job;
    bit<1>      evicted;
    job_id_t    evicted_job;
    bit<2>      egress_to;

    // ina_settings
    bit<1>      preempt;
    bit<1>      release_on_result;
    bit<19>     ecn_threshold;
    bit<16>     active_slots;

    // ina_ps
    bit<1>      ps_hit;
    PortId_t    ps_port;
    mac_addr_t  ps_mac;
    ipv4_addr_t ps_ip;

    // ina_job
    bit<2>      role;
    bitmap_t    worker_bit;
    bit<8>      fan_in;
    bit<8>      priority_cap;
    bit<1>      ina_enabled;
    bit<16>     mcast_group;

    // slot state machine
    bit<32>     slot_index;   // slot
    bit<32>     lane_index;   // pass * NUM_SLOTS + slot
    bit<32>     tag;          // SLOT_BUSY | priority << 16 | job of this packet
    bit<32>     swap_bound;   // slot_tag values below this are taken (free, or preemptible)
    bit<32>     old_tag;
    seq_t       old_seq;
    bitmap_t    old_bitmap;
    bit<8>      old_count;
    bit<8>      old_state;
    bit<8>      state_bits;   // slot_state bits this packet adds
    bit<1>      took;         // slot_tag was overwritten with this packet's tag
    bit<1>      same_job;
    bit<1>      clipped;
    bit<8>      lane_op;
    bit<8>      state_op;     // STATE_*
    bit<1>      first_pass;   // hdr.recirc was not in the packet (set valid for the decision)

    INA_FOREACH_LANE(LANE_FIELD)
}

struct eg_meta_t {
}

#undef LANE_FIELD

#endif // INA_TNA_METADATA_P4
