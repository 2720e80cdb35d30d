// SPDX-License-Identifier: Apache-2.0
// v1model header and metadata structs. BMv2 carries user metadata from ingress to egress (and to
// every multicast replica), so no bridged header is needed here, unlike TNA.
#ifndef INA_V1MODEL_METADATA_P4
#define INA_V1MODEL_METADATA_P4

#include "../../header.p4"

struct headers_t {
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    udp_t          udp;
    ina_t          ina;
    ina_values_t   ina_values;
}

struct ina_meta_t {
    // Set on an evicted partial and preserved across recirculation: the second pass only looks up
    // the PS of the job the packet now carries and sends it there.
    @field_list(0)
    bit<1>      evict_pass;
    bit<1>      recirculate;

    bit<1>      is_ina;        // the parser saw UDP destination port INA_UDP_PORT
    bit<8>      event;         // EVENT_* of this packet, EVENT_NONE for nothing
    bit<1>      job_known;     // count `event` in ina_job_events too
    job_id_t    event_job;
    bit<1>      overflow;      // count `overflow` in addition
    bit<1>      evicted;       // count `evicted` for evicted_job
    job_id_t    evicted_job;
    bit<3>      egress_to;     // OUT_*

    // ina_settings
    bit<1>      preempt;
    bit<1>      release_on_result;
    bit<19>     ecn_threshold;
    bit<16>     active_slots;

    // ina_ps
    bit<1>      ps_hit;
    bit<9>      ps_port;
    mac_addr_t  ps_mac;
    ipv4_addr_t ps_ip;

    // ina_job
    bit<2>      role;          // ROLE_*
    bitmap_t    worker_bit;
    bit<8>      fan_in;
    bit<8>      priority_cap;
    bit<1>      ina_enabled;
    bit<16>     mcast_group;

    // ina_unicast
    bit<9>      unicast_port;
}

#endif // INA_V1MODEL_METADATA_P4
