// SPDX-License-Identifier: Apache-2.0
// TNA headers and metadata. Unlike v1model, nothing survives from ingress to egress or from one
// pass to the next unless it is in a header: ina_bridge_t carries what egress needs, and
// ina_recirc_t carries the slot decision from the decision pass to the lane passes.
#ifndef INA_TNA_METADATA_P4
#define INA_TNA_METADATA_P4

#include "../../header.p4"

// Prepended by the ingress deparser to every packet that goes through egress.
header ina_bridge_t {
    bit<32>  ecn_threshold; // ina_settings' 19-bit threshold, whole-container for the subtraction
    bit<7>   pad;
    PortId_t ingress_port;  // a result replica never leaves by the port the result came in on
    bit<6>   pad2;
    bit<1>   ina_result;    // an INA result: egress prunes the replica to ingress_port
    bit<1>   ina_data;      // an INA data packet: egress may mark ECN
}

// Prepended to a packet sent to INA_RECIRC_PORT; parsed before Ethernet on the next pass. Fields
// are laid out on container boundaries: bf-p4c packs a header into containers as it is laid out.
header ina_recirc_t {
    bit<32> owner_tag;      // slot_tag as the decision pass read it (| TAG_TOOK if it took it)
    bit<32> release_tag;    // with release: the slot_tag value the release pass clears
    bit<16> mcast_group;    // an ATP result's group, for its second pass
    bit<8>  egress_to;      // OUT_*: where the packet goes after its final pass
    bit<8>  pass;           // the lane pass that follows: 0 .. TNA_PASSES-1
    bit<8>  lane_op;        // LANE_*
    bit<8>  state_op;       // STATE_*
    bit<8>  state_bits;     // slot_state bits (TNA_STATE_*) this packet sets or ORs in
    bit<8>  clipped;        // 1: a lane add clipped on this or an earlier lane pass
    bit<7>  pad_port;
    PortId_t orig_port;     // the port the packet first came in on (a result's split horizon)
    bit<5>  pad;
    bit<1>  merge_state;    // last lane pass: OR slot_state's ECN/OVERFLOW into the flags
    bit<1>  release;        // a release pass follows: clear slot_tag if it still holds release_tag
    bit<1>  carry_owner;    // lane pass 0: the packet takes owner_tag's job and priority
}

// The TNA_LANES values a lane pass sums (a quarter of the K values, or half with 32 lanes). The
// lane registers read and write the `lanes` instance, which the parser fills with part p on lane
// pass p; the parts before it ride along in f1.. and those after it in b1.., so the deparser (f*,
// lanes, b*; only the valid ones) always emits the values in wire order. Before and after the
// lane passes, lanes holds part 0.
#define INA_LANE_FIELD(i) bit<32> h##i;
header ina_lanes_t {
    INA_FOREACH_LANE(INA_LANE_FIELD)
}
#undef INA_LANE_FIELD

struct headers_t {
    ina_bridge_t  bridge;
    ina_recirc_t  recirc;
    ethernet_t    ethernet;
    ipv4_t        ipv4;
    udp_t         udp;
    ina_t         ina;
    ina_lanes_t   f1;       // part 0 on lane passes 1..
#if TNA_PASSES == 4
    ina_lanes_t   f2;       // part 1 on lane passes 2-3
    ina_lanes_t   f3;       // part 2 on lane pass 3
#endif
    ina_lanes_t   lanes;
    ina_lanes_t   b1;       // part 1 on lane pass 0 (and every other pass)
#if TNA_PASSES == 4
    ina_lanes_t   b2;       // part 2 on lane passes 0-1
    ina_lanes_t   b3;       // part 3 on lane passes 0-2
#endif
}

struct ig_meta_t {
    bit<1>      first_pass;   // hdr.recirc was not in the packet
    bit<1>      is_ina;
    bit<1>      checksum_err; // the IPv4 header checksum is wrong (first pass)
    bit<32>     event;        // EVENT_*; 32 bits as it is added into the 32-bit counter index
    bit<1>      job_known;
    bit<1>      evicted;
    bit<1>      touch;        // the packet touches its slot (steps 3-8)
    bit<1>      atp;          // an ATP result whose slot SlotTag reads
    bit<2>      tag_op;       // TAG_*
    bit<32>     job_event;    // ina_job_events index: job << 5 | event
    job_id_t    own_job;      // the job id the packet came in with (lane pass 0 may carry another)

    // ina_settings
    bit<1>      preempt;
    bit<1>      release_on_result;
    bit<19>     ecn_threshold;

    // ina_ps
    bit<1>      ps_hit;
    PortId_t    ps_port;
    mac_addr_t  ps_mac;
    ipv4_addr_t ps_ip;

    // ina_unicast
    bit<1>      unicast_hit;
    PortId_t    unicast_port;

    // ina_job
    bit<2>      role;
    bitmap_t    worker_bit;
    bit<8>      fan_in;
    bit<1>      ina_enabled;

    // slot state machine
    bit<16>     slot_room;    // active_slots - slot, saturated at 0
    bit<32>     lane_index;   // lane pass * NUM_SLOTS + slot
    bit<32>     swap_bound;   // slot_tag values below this are taken (free, or preemptible)
    bit<32>     seq_delta;    // old seq - packet seq, as slot_seq answers it
    bitmap_t    old_bitmap;
    bitmap_t    has_bit;      // old_bitmap & worker_bit
    bit<8>      state_flags;  // slot_state's ECN/OVERFLOW, as INA flag bits

}

struct eg_meta_t {
    bit<32>       qdepth;
    bit<32>       ecn_gap;    // ecn_threshold - enq_qdepth
    bit<32>       job_event;  // ina_job_egress_events index: job << 5 | ecn_marked
}

#endif // INA_TNA_METADATA_P4
