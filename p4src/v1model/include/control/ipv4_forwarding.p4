// SPDX-License-Identifier: Apache-2.0
// Ordinary IPv4 forwarding (ipv4_lpm) for non-INA packets.
#ifndef INA_V1MODEL_IPV4_FORWARDING_P4
#define INA_V1MODEL_IPV4_FORWARDING_P4

control Ipv4Forwarding(inout headers_t hdr, inout ina_meta_t meta, inout standard_metadata_t sm) {
    action ipv4_forward(bit<48> dst_mac, bit<9> port) {
        sm.egress_spec = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.event = EVENT_IPV4_FORWARDED;
    }

    action drop() {
        mark_to_drop(sm);
        meta.event = EVENT_IPV4_DROPPED;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
        size = IPV4_LPM_SIZE;
    }

    apply {
        meta.event = EVENT_NONE;
        if (!hdr.ipv4.isValid()) {
            mark_to_drop(sm);
            if (hdr.ethernet.ether_type == ETHERTYPE_IPV4) {
                meta.event = EVENT_IPV4_DROPPED; // IPv4 header cut short
            } // other frames: dropped, not counted
        } else if (sm.checksum_error == 1 || hdr.ipv4.ihl != 5 || hdr.ipv4.ttl <= 1) {
            // Not routed: a corrupt header, options (not parsed), or a TTL that would reach 0.
            mark_to_drop(sm);
            meta.event = EVENT_IPV4_DROPPED;
        } else {
            ipv4_lpm.apply();
        }
    }
}

#endif // INA_V1MODEL_IPV4_FORWARDING_P4
