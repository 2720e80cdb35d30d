// SPDX-License-Identifier: Apache-2.0
// TNA parsers and deparsers. Ingress: a packet arriving on INA_RECIRC_PORT starts with
// ina_recirc_t. Egress: every packet starts with ina_bridge_t.
#ifndef INA_TNA_PARSER_P4
#define INA_TNA_PARSER_P4

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t md,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        // Metadata starts here, not in tables: a table that initialises a field the first
        // stages write would cost a stage of the decision pass.
        md.is_ina = 0;
        md.checksum_err = 0;
        md.event = EVENT_NONE;
        md.evicted = 0;
        md.touch = 0;
        md.atp = 0;
        md.tag_op = TAG_NONE;
        md.ps_hit = 0;
        md.role = ROLE_NONE;
        md.job_known = 0;
        md.has_bit = 0;
        md.state_flags = 0;
        transition select(ig_intr_md.ingress_port) {
            INA_RECIRC_PORT: parse_recirc;
            default: first_pass;
        }
    }

    // A packet from a port: hdr.recirc starts empty here, so no table has to clear it (the lane
    // passes' tables then depend on nothing the decision pass's tables write).
    state first_pass {
        md.first_pass = 1;
        hdr.recirc.setValid();
        hdr.recirc.owner_tag = 0;
        hdr.recirc.release_tag = 0;
        hdr.recirc.mcast_group = 0;
        hdr.recirc.egress_to = OUT_DROP;
        hdr.recirc.pass = 0;
        hdr.recirc.lane_op = LANE_NONE;
        hdr.recirc.state_op = STATE_NONE;
        hdr.recirc.state_bits = 0;
        hdr.recirc.clipped = 0;
        hdr.recirc.pad = 0;
        hdr.recirc.pad_port = 0;
        hdr.recirc.orig_port = ig_intr_md.ingress_port;
        hdr.recirc.merge_state = 0;
        hdr.recirc.release = 0;
        hdr.recirc.carry_owner = 0;
        transition parse_ethernet;
    }

    // Only slot-touching INA packets come back from the recirculation port, in the layout that
    // ingress validated on their first pass; the lane pass says which part of the values the lanes take.
    state parse_recirc {
        md.first_pass = 0;
        pkt.extract(hdr.recirc);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.ina);
        md.is_ina = 1;
        md.own_job = hdr.ina.job_id;
        transition select(hdr.recirc.pass) {
            1: parse_part_1;
#if TNA_PASSES == 4
            2: parse_part_2;
            3: parse_part_3;
#endif
            default: parse_part_0;
        }
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    // No IPv4 options: UDP is read right after the 20-byte header whatever the IHL. Only an
    // unfragmented packet or a first fragment has a UDP header. The header checksum is verified
    // here (ingress drops a bad one).
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        md.checksum_err = (bit<1>)ipv4_checksum.verify();
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }

    state parse_ina {
        md.is_ina = 1;
        pkt.extract(hdr.ina);
        md.own_job = hdr.ina.job_id;
        transition parse_part_0;
    }

#if TNA_PASSES == 4
    state parse_part_0 {
        pkt.extract(hdr.lanes);
        pkt.extract(hdr.b1);
        pkt.extract(hdr.b2);
        pkt.extract(hdr.b3);
        transition accept;
    }

    state parse_part_1 {
        pkt.extract(hdr.f1);
        pkt.extract(hdr.lanes);
        pkt.extract(hdr.b2);
        pkt.extract(hdr.b3);
        transition accept;
    }

    state parse_part_2 {
        pkt.extract(hdr.f1);
        pkt.extract(hdr.f2);
        pkt.extract(hdr.lanes);
        pkt.extract(hdr.b3);
        transition accept;
    }

    state parse_part_3 {
        pkt.extract(hdr.f1);
        pkt.extract(hdr.f2);
        pkt.extract(hdr.f3);
        pkt.extract(hdr.lanes);
        transition accept;
    }
#else
    state parse_part_0 {
        pkt.extract(hdr.lanes);
        pkt.extract(hdr.b1);
        transition accept;
    }

    state parse_part_1 {
        pkt.extract(hdr.f1);
        pkt.extract(hdr.lanes);
        transition accept;
    }
#endif
}

control IngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t md,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.recirc);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.f1);
#if TNA_PASSES == 4
        pkt.emit(hdr.f2);
        pkt.emit(hdr.f3);
#endif
        pkt.emit(hdr.lanes);
        pkt.emit(hdr.b1);
#if TNA_PASSES == 4
        pkt.emit(hdr.b2);
        pkt.emit(hdr.b3);
#endif
    }
}

parser EgressParser(packet_in pkt, out headers_t hdr, out eg_meta_t md,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }

    // Egress only rewrites the INA flags: the values stay in the packet body.
    state parse_ina {
        pkt.extract(hdr.ina);
        transition accept;
    }
}

control EgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t md,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        // hdr.bridge is not emitted: the bridged metadata ends here.
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
    }
}

#endif // INA_TNA_PARSER_P4
