// SPDX-License-Identifier: Apache-2.0
// ina_ps and ina_job, as in the v1model build, in two controls: ina_ps runs on every pass, ina_job
// on the first.
#ifndef INA_TNA_JOB_LOOKUP_P4
#define INA_TNA_JOB_LOOKUP_P4

// ina_ps, on every pass: the final pass of a recirculated packet sends it to the PS of the job it
// carries then (an evicted partial's owner).
control PsLookup(inout headers_t hdr, inout ig_meta_t md) {
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

    apply {
        md.ps_hit = 0;
        ina_ps.apply();
    }
}

// ina_job and the checks of a first pass (PsLookup ran before).
control JobLookup(inout headers_t hdr, inout ig_meta_t md,
                  in ingress_intrinsic_metadata_t ig_intr_md) {
    // A member's data packet is normalised here (clamped priority, worker bit as bitmap); any
    // other packet that matches a worker entry is dropped below, so the rewrite is harmless.
    action ina_worker(bit<32> worker_bit, bit<8> fan_in, bit<8> priority_cap, bit<1> ina_enabled) {
        md.role = ROLE_WORKER;
        md.worker_bit = worker_bit;
        md.fan_in = fan_in;
        md.ina_enabled = ina_enabled;
        hdr.ina.priority = min(hdr.ina.priority, priority_cap);
        hdr.ina.bitmap = worker_bit;
    }

    action ina_result(bit<16> mcast_group) {
        md.role = ROLE_RESULT;
        hdr.recirc.mcast_group = mcast_group;
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

    // slot < active_slots iff active_slots - slot, saturated at 0, is not 0: a gateway cannot
    // compare two fields, so the difference is stored by a table of its own.
    action room() {
        md.slot_room = md.active_slots |-| hdr.ina.slot;
    }
    @hidden table slot_range {
        actions = { room; } default_action = room(); size = 1;
    }

    apply {
        md.role = ROLE_NONE;
        md.job_known = 0;
        slot_range.apply();
        if (md.event != EVENT_NONE) {
            return;
        }
        if (md.ps_hit == 0) {
            md.event = EVENT_DROP_UNKNOWN_JOB;
            return;
        }
        md.job_known = 1;
        ina_job.apply();
        if (hdr.ina.pkt_type == INA_TYPE_DATA) {
            if (md.role == ROLE_TRANSIT) {
                md.event = EVENT_TRANSIT;
                hdr.recirc.egress_to = OUT_PS;
            } else if (md.role != ROLE_WORKER) {
                md.event = EVENT_DROP_BAD_PORT;
            } else {
                hdr.ina.flags = hdr.ina.flags & WORKER_FLAGS;
            }
        } else if (md.role == ROLE_RESULT) {
            md.event = EVENT_RESULT;
            hdr.recirc.egress_to = OUT_MCAST;
        } else {
            md.event = EVENT_DROP_BAD_PORT;
        }
    }
}

#endif // INA_TNA_JOB_LOOKUP_P4
