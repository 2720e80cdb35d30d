// SPDX-License-Identifier: Apache-2.0
// Length, parser, version and type checks (docs/protocol.md "Validation") of an INA packet's
// first pass, in one ternary table: the checks as gateways took a logical table each in the
// first stage, which the lookups beside them need.
// Tofino's ingress has no packet length: the frame-length check is the IPv4 and UDP length fields
// plus a parser that ran to the last value (see p4src/README.md, "TNA differences").
#ifndef INA_TNA_VALIDATION_P4
#define INA_TNA_VALIDATION_P4

control Validation(in headers_t hdr, inout ig_meta_t md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md) {
    action malformed() {
        md.event = EVENT_DROP_MALFORMED;
    }
    action bad_version() {
        md.event = EVENT_DROP_VERSION;
    }
    action well_formed() {
    }

    // In order: a packet that parsed to its last value, with a good checksum, no MF, IHL 5 and
    // the fixed lengths, is well formed if it is version 1 data or result; a bad type of version
    // 1 is malformed, any other version drop_version; anything else malformed.
    table validate {
        key = {
            ig_prsr_md.parser_err: ternary;
            TNA_LAST_VALUES.isValid(): ternary;
            md.checksum_err: ternary;
            hdr.ipv4.flags: ternary;
            hdr.ipv4.ihl: ternary;
            hdr.ipv4.total_len: ternary;
            hdr.udp.length: ternary;
            hdr.ina.version: ternary;
            hdr.ina.pkt_type: ternary;
        }
        actions = { malformed; bad_version; well_formed; }
        const entries = {
            (0, true, 0, 0 &&& 1, 5, INA_IPV4_TOTAL_LEN, INA_UDP_LEN, INA_VERSION, INA_TYPE_DATA): well_formed();
            (0, true, 0, 0 &&& 1, 5, INA_IPV4_TOTAL_LEN, INA_UDP_LEN, INA_VERSION, INA_TYPE_RESULT): well_formed();
            (0, true, 0, 0 &&& 1, 5, INA_IPV4_TOTAL_LEN, INA_UDP_LEN, INA_VERSION, _): malformed();
            (0, true, 0, 0 &&& 1, 5, INA_IPV4_TOTAL_LEN, INA_UDP_LEN, _, _): bad_version();
        }
        default_action = malformed();
        size = 4;
    }

    apply {
        validate.apply();
    }
}

#endif // INA_TNA_VALIDATION_P4
