// SPDX-License-Identifier: Apache-2.0
// Where an INA packet goes after a pass: round the recirculation port again (more lanes to sum,
// or a slot to free), or, on its final pass, to the PS of the job it carries, to the job's
// multicast group, or nowhere.
#ifndef INA_TNA_INA_FORWARDING_P4
#define INA_TNA_INA_FORWARDING_P4

control InaForwarding(inout headers_t hdr, inout ig_meta_t md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply {
        bool again;
        if (md.first_pass == 1) {
            hdr.recirc.egress_to = (bit<8>)md.egress_to;
            hdr.recirc.lane_op = md.lane_op;
            hdr.recirc.count_job = md.event_job;
            hdr.recirc.mcast_group = md.mcast_group;
            hdr.recirc.pass = 0;
            if (md.lane_op != LANE_NONE) {
                hdr.recirc.passes_left = TNA_PASSES - 1;
                again = true;
            } else {
                hdr.recirc.passes_left = 0;
                again = hdr.recirc.release_tag != 0; // ATP result: free the slot on pass 2
            }
        } else {
            again = hdr.recirc.passes_left != 0;
        }

        if (again) {
            if (md.first_pass == 0) {
                hdr.recirc.passes_left = hdr.recirc.passes_left - 1;
            }
            hdr.recirc.pass = hdr.recirc.pass + 1;
            ig_tm_md.ucast_egress_port = INA_RECIRC_PORT;
            ig_tm_md.bypass_egress = 1;
            return;
        }

        // Final pass.
        bit<8> to = md.first_pass == 1 ? (bit<8>)md.egress_to : hdr.recirc.egress_to;
        bit<16> group = md.first_pass == 1 ? md.mcast_group : hdr.recirc.mcast_group;
        hdr.recirc.setInvalid();
        if (to == OUT_PS) {
            if (md.ps_hit == 0) {
                ig_dprsr_md.drop_ctl = 1; // the evicted job's PS entry is gone: partial lost
                return;
            }
            ig_tm_md.ucast_egress_port = md.ps_port;
            hdr.ethernet.dst_addr = md.ps_mac;
            hdr.ipv4.dst_addr = md.ps_ip;
            hdr.udp.checksum = 0;
        } else if (to == OUT_MCAST) {
            ig_tm_md.mcast_grp_a = group;
            hdr.udp.checksum = 0;
        } else {
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        hdr.bridge.setValid();
        hdr.bridge.pad = 0;
        hdr.bridge.pad2 = 0;
        hdr.bridge.ina_data = hdr.ina.pkt_type == INA_TYPE_DATA ? 1w1 : 1w0;
        hdr.bridge.ecn_threshold = md.ecn_threshold;
    }
}

#endif // INA_TNA_INA_FORWARDING_P4
