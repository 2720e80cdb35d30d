// SPDX-License-Identifier: Apache-2.0
// Packet headers shared by the v1model and TNA builds (docs/protocol.md, "Frame" and "INA header").
#ifndef INA_HEADER_P4
#define INA_HEADER_P4

#include "define.p4"

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      tos;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// The 16-byte INA header. `type` is a P4 keyword, hence pkt_type. The top 4 bits of `flags` are
// the member index (INA_MEMBER): a field of their own made bf-p4c's PHV allocation of the flag
// rewrites unsatisfiable, and as bits of the flags word the worker-flags mask that clears the
// switch-owned flags also zeroes the member on everything a member's packet leaves as.
header ina_t {
    bit<4>       version;
    bit<4>       pkt_type;
    bit<8>       priority;
    bit<16>      flags;
    job_id_t     job_id;
    slot_index_t slot;
    seq_t        seq;
    bitmap_t     bitmap;
}

// The K values, one field each (v0 .. v63).
#define INA_VALUE_FIELD(i) value_t v##i;
header ina_values_t {
    INA_FOREACH_VALUE(INA_VALUE_FIELD)
}
#undef INA_VALUE_FIELD

#endif // INA_HEADER_P4
