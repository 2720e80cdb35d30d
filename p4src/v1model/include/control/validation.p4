// SPDX-License-Identifier: Apache-2.0
// Classifies a frame (INA, ordinary IPv4, other) and applies the length, parser, version and type
// checks of docs/protocol.md "Validation", in that order. Nothing here touches a slot.
#ifndef INA_V1MODEL_VALIDATION_P4
#define INA_V1MODEL_VALIDATION_P4

control Validation(in headers_t hdr, inout ina_meta_t meta, in standard_metadata_t sm) {
    apply {
        meta.event = EVENT_NONE;
        meta.egress_to = OUT_DROP;
        if (meta.is_ina == 1) { // set by the parser: UDP destination port INA_UDP_PORT
            // MF set: a first fragment (a later one has no UDP header and is not INA).
            if (sm.parser_error != error.NoError || !hdr.ina_values.isValid() ||
                    hdr.ipv4.ihl != 5 || hdr.ipv4.total_len != INA_IPV4_TOTAL_LEN ||
                    hdr.udp.length != INA_UDP_LEN || sm.packet_length != INA_FRAME_LEN ||
                    sm.checksum_error == 1 || hdr.ipv4.flags[0:0] == 1) {
                meta.event = EVENT_DROP_MALFORMED;
            } else if (hdr.ina.version != INA_VERSION) {
                meta.event = EVENT_DROP_VERSION;
            } else if (hdr.ina.pkt_type != INA_TYPE_DATA && hdr.ina.pkt_type != INA_TYPE_RESULT) {
                meta.event = EVENT_DROP_MALFORMED;
            }
        }
    }
}

#endif // INA_V1MODEL_VALIDATION_P4
