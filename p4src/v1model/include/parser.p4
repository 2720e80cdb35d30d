// SPDX-License-Identifier: Apache-2.0
// v1model parser and deparser. A truncated frame is not rejected here: v1model hands it to ingress
// with standard_metadata.parser_error set, and ingress counts it (drop_malformed for INA).
#ifndef INA_V1MODEL_PARSER_P4
#define INA_V1MODEL_PARSER_P4

parser InaParser(packet_in pkt, out headers_t hdr, inout ina_meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // IPv4 options are not parsed: UDP is read right after the 20-byte header whatever the
        // IHL, and ingress drops an INA packet whose IHL is not 5 (drop_malformed). Only an
        // unfragmented packet or a first fragment has a UDP header.
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

    // A frame is INA once its whole UDP header, to INA_UDP_PORT, is there; cut anywhere after
    // that, ingress counts it drop_malformed.
    state parse_ina {
        meta.is_ina = 1;
        pkt.extract(hdr.ina);
        pkt.extract(hdr.ina_values);
        transition accept;
    }
}

control InaDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.ina_values);
    }
}

// A bad IPv4 header checksum sets standard_metadata.checksum_error; ingress drops the packet
// (drop_malformed for INA, ipv4_dropped otherwise).
control InaVerifyChecksum(inout headers_t hdr, inout ina_meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

// Every emitted IPv4 header gets a fresh checksum (TTL, dst address and lengths may have changed).
control InaComputeChecksum(inout headers_t hdr, inout ina_meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

#endif // INA_V1MODEL_PARSER_P4
