// SPDX-License-Identifier: Apache-2.0
// Where an INA packet goes after a pass: round the recirculation port again (lanes to sum, or an
// ATP slot to free), or, on its final pass, to the PS of the job it carries, to the job's
// multicast group, or nowhere.
#ifndef INA_TNA_INA_FORWARDING_P4
#define INA_TNA_INA_FORWARDING_P4

control InaForwarding(inout headers_t hdr, inout ig_meta_t md,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action recirculate() {
        ig_tm_md.ucast_egress_port = INA_RECIRC_PORT;
        ig_tm_md.bypass_egress = 1;
    }

    apply {
        if (md.first_pass == 1) {
            if (hdr.recirc.lane_op != LANE_NONE || hdr.recirc.release == 1) {
                hdr.recirc.pass = 0;
                recirculate();
                return;
            }
        } else {
            if (hdr.recirc.lane_op != LANE_NONE && hdr.recirc.pass != TNA_PASSES - 1) {
                hdr.recirc.pass = hdr.recirc.pass + 1;
                recirculate();
                return;
            }
        }

        // Final pass.
        hdr.recirc.setInvalid();
        if (hdr.recirc.egress_to == OUT_PS) {
            if (md.ps_hit == 0) {
                // The evicted job's PS entry is gone: the partial is dropped, and counted.
                ig_dprsr_md.drop_ctl = 1;
                md.event = EVENT_DROP_UNKNOWN_JOB;
                return;
            }
            ig_tm_md.ucast_egress_port = md.ps_port;
            hdr.ethernet.dst_addr = md.ps_mac;
            hdr.ipv4.dst_addr = md.ps_ip;
            hdr.udp.checksum = 0;
        } else if (hdr.recirc.egress_to == OUT_MCAST && hdr.recirc.mcast_group != 0) {
            ig_tm_md.mcast_grp_a = hdr.recirc.mcast_group;
            hdr.udp.checksum = 0;
        } else {
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        hdr.bridge.setValid();
        hdr.bridge.pad = 0;
        hdr.bridge.pad2 = 0;
        hdr.bridge.ingress_port = ig_intr_md.ingress_port;
        hdr.bridge.ina_data = 0;
        hdr.bridge.ina_result = 0;
        if (hdr.ina.pkt_type == INA_TYPE_DATA) {
            hdr.bridge.ina_data = 1;
        } else {
            hdr.bridge.ina_result = 1;
        }
        hdr.bridge.ecn_threshold = (bit<32>)md.ecn_threshold;
    }
}

#endif // INA_TNA_INA_FORWARDING_P4
