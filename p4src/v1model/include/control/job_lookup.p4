// SPDX-License-Identifier: Apache-2.0
// Job lookup: ina_ps (job -> PS) and ina_job ((job, ingress port, member) -> role). Decides
// drop_unknown_job and drop_bad_port, and normalises a member worker's data packet (clamped
// priority, worker bit as bitmap, switch-owned and reserved flags cleared; the worker-flags mask
// also zeroes the member index, which names a worker behind this switch's port only).
#ifndef INA_V1MODEL_JOB_LOOKUP_P4
#define INA_V1MODEL_JOB_LOOKUP_P4

control JobLookup(inout headers_t hdr, inout ina_meta_t meta, in standard_metadata_t sm) {
    action ina_set_ps(bit<9> port, bit<48> mac, bit<32> ip) {
        meta.ps_hit = 1;
        meta.ps_port = port;
        meta.ps_mac = mac;
        meta.ps_ip = ip;
    }

    table ina_ps {
        key = { hdr.ina.job_id: exact; }
        actions = { ina_set_ps; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_PS_SIZE;
    }

    action ina_worker(bit<32> worker_bit, bit<8> fan_in, bit<8> priority_cap, bit<1> ina_enabled) {
        meta.role = ROLE_WORKER;
        meta.worker_bit = worker_bit;
        meta.fan_in = fan_in;
        meta.priority_cap = priority_cap;
        meta.ina_enabled = ina_enabled;
    }

    action ina_result(bit<16> mcast_group) {
        meta.role = ROLE_RESULT;
        meta.mcast_group = mcast_group;
    }

    action ina_transit() {
        meta.role = ROLE_TRANSIT;
    }

    table ina_job {
        key = {
            hdr.ina.job_id: exact;
            sm.ingress_port: exact @name("standard_metadata.ingress_port");
            INA_MEMBER(hdr.ina): exact @name("member");
        }
        actions = { ina_worker; ina_result; ina_transit; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_JOB_SIZE;
    }

    apply {
        meta.ps_hit = 0;
        meta.role = ROLE_NONE;
        meta.job_known = 0;
        ina_ps.apply();
        if (meta.evict_pass == 1) {
            // Second pass of an evicted partial: only its PS is wanted. Without one (the job was
            // removed while it held the slot) the partial is dropped as drop_unknown_job.
            if (meta.ps_hit == 1) {
                meta.egress_to = OUT_PS;
            } else {
                meta.egress_to = OUT_DROP;
                meta.event = EVENT_DROP_UNKNOWN_JOB;
            }
            return;
        }
        if (meta.event != EVENT_NONE) {
            return; // failed validation
        }
        if (meta.ps_hit == 0) {
            meta.event = EVENT_DROP_UNKNOWN_JOB;
            return;
        }
        meta.job_known = 1;
        meta.event_job = hdr.ina.job_id;
        ina_job.apply();
        if (hdr.ina.pkt_type == INA_TYPE_DATA) {
            if (meta.role == ROLE_TRANSIT) {
                meta.event = EVENT_TRANSIT;
                meta.egress_to = OUT_PS;
            } else if (meta.role != ROLE_WORKER) {
                meta.event = EVENT_DROP_BAD_PORT;
            } else {
                hdr.ina.flags = hdr.ina.flags & WORKER_FLAGS;
                if (hdr.ina.priority > meta.priority_cap) {
                    hdr.ina.priority = meta.priority_cap;
                }
                hdr.ina.bitmap = meta.worker_bit;
            }
        } else if (meta.role == ROLE_RESULT) {
            meta.event = EVENT_RESULT;
            meta.egress_to = OUT_MCAST;
        } else {
            meta.event = EVENT_DROP_BAD_PORT;
        }
    }
}

#endif // INA_V1MODEL_JOB_LOOKUP_P4
