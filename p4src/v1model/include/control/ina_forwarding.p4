// SPDX-License-Identifier: Apache-2.0
// Sends an INA packet where the slot logic decided: to the PS of the job it carries, to the job's
// multicast group, to one worker's port (a unicast result), into a second pass (an evicted partial of another job), or nowhere. Group 0
// replicates nothing (left to v1model, the packet would go to port 0).
#ifndef INA_V1MODEL_INA_FORWARDING_P4
#define INA_V1MODEL_INA_FORWARDING_P4

control InaForwarding(inout headers_t hdr, inout ina_meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.recirculate = 0;
        if (meta.egress_to == OUT_PS) {
            sm.egress_spec = meta.ps_port;
            hdr.ethernet.dst_addr = meta.ps_mac;
            hdr.ipv4.dst_addr = meta.ps_ip;
            hdr.udp.checksum = 0;
        } else if (meta.egress_to == OUT_MCAST && meta.mcast_group != 0) {
            sm.mcast_grp = meta.mcast_group;
            hdr.udp.checksum = 0;
        } else if (meta.egress_to == OUT_UNICAST) {
            sm.egress_spec = meta.unicast_port;
            hdr.udp.checksum = 0;
        } else if (meta.egress_to == OUT_EVICT) {
            // ina_ps was applied for the incoming job; the evicted job's PS is looked up on a
            // second pass. The port only has to exist: egress recirculates instead of sending.
            sm.egress_spec = sm.ingress_port;
            meta.evict_pass = 1;
            meta.recirculate = 1;
        } else {
            mark_to_drop(sm);
        }
    }
}

#endif // INA_V1MODEL_INA_FORWARDING_P4
