// SPDX-License-Identifier: Apache-2.0
// ina_unicast, as in the v1model build: a result with FLAG_UNICAST whose (job, bitmap) has an entry
// leaves by that entry's port instead of the job's group. Looked up on every pass, from header
// fields only (the final pass of an ATP result forwards it too), beside ina_ps; InaForwarding
// decides from the hit.
#ifndef INA_TNA_RESULT_UNICAST_P4
#define INA_TNA_RESULT_UNICAST_P4

control ResultUnicast(in headers_t hdr, inout ig_meta_t md) {
    action ina_unicast_port(PortId_t port) {
        md.unicast_hit = 1;
        md.unicast_port = port;
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
        md.unicast_hit = 0;
        if (hdr.ina.isValid() && hdr.ina.pkt_type == INA_TYPE_RESULT &&
                (hdr.ina.flags & FLAG_UNICAST) != 0) {
            ina_unicast.apply();
        }
    }
}

#endif // INA_TNA_RESULT_UNICAST_P4
