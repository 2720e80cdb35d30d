// SPDX-License-Identifier: Apache-2.0
// Where an INA packet goes after a pass: round the recirculation port again (lanes to sum, or a
// slot to free), or, on its final pass, to the PS of the job it carries, to the job's
// multicast group, to one worker's port (a result with an ina_unicast hit), or nowhere. One if-else chain of single actions, so the outcomes are exclusive
// and placed in one stage.
#ifndef INA_TNA_INA_FORWARDING_P4
#define INA_TNA_INA_FORWARDING_P4

control InaForwarding(inout headers_t hdr, inout ig_meta_t md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    // The decision pass leaves hdr.recirc.pass at 0 (the parser's), for lane pass 0.
    action recirculate() {
        ig_tm_md.ucast_egress_port = INA_RECIRC_PORT;
        ig_tm_md.bypass_egress = 1;
    }

    action recirculate_next() {
        ig_tm_md.ucast_egress_port = INA_RECIRC_PORT;
        ig_tm_md.bypass_egress = 1;
        hdr.recirc.pass = hdr.recirc.pass + 1;
    }

    // After the last lane pass of a chunk that frees its slot: one more pass, without lanes, in
    // which SlotTag frees it (slot_tag's table is not on the lane passes).
    action recirculate_release() {
        ig_tm_md.ucast_egress_port = INA_RECIRC_PORT;
        ig_tm_md.bypass_egress = 1;
        hdr.recirc.lane_op = LANE_NONE;
    }

    // The final pass: hdr.recirc ends here; egress gets what it needs in hdr.bridge.
    action bridge(bit<1> result) {
        hdr.udp.checksum = 0;
        hdr.bridge.setValid();
        hdr.bridge.pad = 0;
        hdr.bridge.pad2 = 0;
        hdr.bridge.ingress_port = hdr.recirc.orig_port;
        hdr.bridge.ina_data = ~result;
        hdr.bridge.ina_result = result;
        hdr.bridge.ecn_threshold = (bit<32>)md.ecn_threshold;
        hdr.recirc.setInvalid();
    }

    action to_ps() {
        ig_tm_md.ucast_egress_port = md.ps_port;
        hdr.ethernet.dst_addr = md.ps_mac;
        hdr.ipv4.dst_addr = md.ps_ip;
        bridge(0);
    }

    action to_group() {
        ig_tm_md.mcast_grp_a = hdr.recirc.mcast_group;
        bridge(1);
    }

    // OUT_UNICAST of the v1model build: a result ResultUnicast found the worker's port for.
    action to_worker() {
        ig_tm_md.ucast_egress_port = md.unicast_port;
        bridge(1);
    }

    // Consumed, dropped, or an evicted partial whose job's PS entry is gone (counted
    // drop_unknown_job by EventCounting).
    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    apply {
        if (md.first_pass == 1 && (hdr.recirc.lane_op != LANE_NONE || hdr.recirc.release == 1)) {
            recirculate();
        } else if (md.first_pass == 0 && hdr.recirc.lane_op != LANE_NONE &&
                hdr.recirc.pass != TNA_PASSES - 1) {
            recirculate_next();
        } else if (md.first_pass == 0 && hdr.recirc.lane_op != LANE_NONE &&
                hdr.recirc.release == 1) {
            recirculate_release();
        } else if (hdr.recirc.egress_to == OUT_PS && md.ps_hit == 1) {
            to_ps();
        } else if (hdr.recirc.egress_to == OUT_MCAST && md.unicast_hit == 1) {
            to_worker();
        } else if (hdr.recirc.egress_to == OUT_MCAST && hdr.recirc.mcast_group != 0) {
            to_group();
        } else {
            drop();
        }
    }
}

#endif // INA_TNA_INA_FORWARDING_P4
