// SPDX-License-Identifier: Apache-2.0
// ina_ps and ina_job, as in the v1model build. On the final pass of a recirculated packet only
// ina_ps is used: it finds the PS of the job the packet now carries (an evicted partial's owner).
#ifndef INA_TNA_JOB_LOOKUP_P4
#define INA_TNA_JOB_LOOKUP_P4

control JobLookup(inout headers_t hdr, inout ig_meta_t md,
                  in ingress_intrinsic_metadata_t ig_intr_md) {
    action ina_set_ps(PortId_t port, bit<48> mac, bit<32> ip) {
        md.ps_hit = 1;
        md.ps_port = port;
        md.ps_mac = mac;
        md.ps_ip = ip;
    }

    table ina_ps {
        key = { hdr.ina.job_id: exact; }
        actions = { ina_set_ps; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_PS_SIZE;
    }

    action ina_worker(bit<32> worker_bit, bit<8> fan_in, bit<8> priority_cap, bit<1> ina_enabled) {
        md.role = ROLE_WORKER;
        md.worker_bit = worker_bit;
        md.fan_in = fan_in;
        md.priority_cap = priority_cap;
        md.ina_enabled = ina_enabled;
    }

    action ina_result(bit<16> mcast_group) {
        md.role = ROLE_RESULT;
        md.mcast_group = mcast_group;
    }

    action ina_transit() {
        md.role = ROLE_TRANSIT;
    }

    table ina_job {
        key = {
            hdr.ina.job_id: exact;
            ig_intr_md.ingress_port: exact;
        }
        actions = { ina_worker; ina_result; ina_transit; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_JOB_SIZE;
    }

    apply {
        md.ps_hit = 0;
        md.role = ROLE_NONE;
        md.job_known = 0;
        ina_ps.apply();
        if (md.first_pass == 0) {
            return; // later passes: the slot decision is in hdr.recirc
        }
        if (md.event != EVENT_NONE) {
            return;
        }
        if (md.ps_hit == 0) {
            md.event = EVENT_DROP_UNKNOWN_JOB;
            return;
        }
        md.job_known = 1;
        md.event_job = hdr.ina.job_id;
        ina_job.apply();
        if (hdr.ina.pkt_type == INA_TYPE_DATA) {
            if (md.role == ROLE_TRANSIT) {
                md.event = EVENT_TRANSIT;
                md.egress_to = OUT_PS;
            } else if (md.role != ROLE_WORKER) {
                md.event = EVENT_DROP_BAD_PORT;
            } else if (hdr.ina.slot >= md.active_slots || hdr.ina.slot >= NUM_SLOTS) {
                md.event = EVENT_DROP_SLOT_RANGE;
            } else {
                hdr.ina.flags = hdr.ina.flags & WORKER_FLAGS;
                hdr.ina.priority = min(hdr.ina.priority, md.priority_cap);
                hdr.ina.bitmap = md.worker_bit;
            }
        } else if (md.role == ROLE_RESULT) {
            md.event = EVENT_RESULT;
            md.egress_to = OUT_MCAST;
        } else {
            md.event = EVENT_DROP_BAD_PORT;
        }
    }
}

#endif // INA_TNA_JOB_LOOKUP_P4
