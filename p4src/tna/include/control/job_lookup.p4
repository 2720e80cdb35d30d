// SPDX-License-Identifier: Apache-2.0
// ina_ps and ina_job, as in the v1model build. Both are looked up unconditionally in the first
// stage, in parallel with validation: the ingress control decides from their results, so no
// lookup waits for another table's outcome.
#ifndef INA_TNA_JOB_LOOKUP_P4
#define INA_TNA_JOB_LOOKUP_P4

// ina_ps, on every pass: the final pass of a recirculated packet sends it to the PS of the job it
// carries then (an evicted partial's owner).
control PsLookup(in headers_t hdr, inout ig_meta_t md) {
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
        ina_ps.apply();
    }
}

// ina_job on a first pass, keyed by (job, ingress port, member). A member's data packet is
// normalised here (clamped priority, worker bit as bitmap, switch-owned flags and the member
// cleared by the worker-flags mask); any other packet that matches a worker entry is dropped
// (drop_bad_port, or validation's drop), so the rewrite is harmless.
control JobLookup(inout headers_t hdr, inout ig_meta_t md,
                  in ingress_intrinsic_metadata_t ig_intr_md) {
    action ina_worker(bit<32> worker_bit, bit<8> fan_in, bit<8> priority_cap, bit<1> ina_enabled) {
        md.role = ROLE_WORKER;
        md.worker_bit = worker_bit;
        md.fan_in = fan_in;
        md.ina_enabled = ina_enabled;
        hdr.ina.priority = min(hdr.ina.priority, priority_cap);
        hdr.ina.bitmap = worker_bit;
        hdr.ina.flags = hdr.ina.flags & WORKER_FLAGS;
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
            INA_MEMBER(hdr.ina): exact @name("member");
        }
        actions = { ina_worker; ina_result; ina_transit; @defaultonly NoAction; }
        default_action = NoAction();
        size = INA_JOB_SIZE;
    }

    apply {
        ina_job.apply();
    }
}

#endif // INA_TNA_JOB_LOOKUP_P4
