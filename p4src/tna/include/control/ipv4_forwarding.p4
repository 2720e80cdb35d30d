// SPDX-License-Identifier: Apache-2.0
// Ordinary IPv4 forwarding (ipv4_lpm) for non-INA packets.
#ifndef INA_TNA_IPV4_FORWARDING_P4
#define INA_TNA_IPV4_FORWARDING_P4

control Ipv4Forwarding(inout headers_t hdr, inout ig_meta_t md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action ipv4_forward(bit<48> dst_mac, PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        md.event = EVENT_IPV4_FORWARDED;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
        md.event = EVENT_IPV4_DROPPED;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { ipv4_forward; drop; }
        default_action = drop();
        size = IPV4_LPM_SIZE;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            ig_dprsr_md.drop_ctl = 1;
            if (hdr.ethernet.ether_type == ETHERTYPE_IPV4) {
                md.event = EVENT_IPV4_DROPPED;
            }
        } else if (md.checksum_err == 1 || hdr.ipv4.ihl != 5 || hdr.ipv4.ttl <= 1) {
            // Not routed: a corrupt header, options (not parsed), or a TTL that would reach 0.
            ig_dprsr_md.drop_ctl = 1;
            md.event = EVENT_IPV4_DROPPED;
        } else {
            ipv4_lpm.apply();
            hdr.recirc.setInvalid();
            hdr.bridge.setValid();
            hdr.bridge.pad = 0;
            hdr.bridge.pad2 = 0;
            hdr.bridge.ingress_port = 0;
            hdr.bridge.ina_data = 0;
            hdr.bridge.ina_result = 0;
            hdr.bridge.ecn_threshold = 0;
        }
    }
}

#endif // INA_TNA_IPV4_FORWARDING_P4
