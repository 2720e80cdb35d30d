// SPDX-License-Identifier: Apache-2.0
// ina_unicast: a result the PS flagged FLAG_UNICAST (its answer to one worker's RESEND, with that
// worker's bit as the bitmap) leaves by the one port toward that worker. A miss (no entry, or a
// bitmap of several bits) leaves the result to the job's group, as any result.
#ifndef INA_V1MODEL_RESULT_UNICAST_P4
#define INA_V1MODEL_RESULT_UNICAST_P4

control ResultUnicast(in headers_t hdr, inout ina_meta_t meta) {
    action ina_unicast_port(bit<9> port) {
        meta.egress_to = OUT_UNICAST;
        meta.unicast_port = port;
    }

    table ina_unicast {
        key = {
            hdr.ina.job_id: exact;
            hdr.ina.bitmap: exact;
        }
        actions = { ina_unicast_port; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_UNICAST_SIZE;
    }

    apply {
        if (meta.egress_to == OUT_MCAST && (hdr.ina.flags & FLAG_UNICAST) != 0) {
            ina_unicast.apply();
        }
    }
}

#endif // INA_V1MODEL_RESULT_UNICAST_P4
