# SPDX-License-Identifier: Apache-2.0
"""Runs every conformance vector (test/vectors/*.json) against the switch under test.

For each vector: push the pipeline (which resets the switch), install the setup, then for every
step send the packet, check the exact packets that leave each port (in order per port, nothing
else anywhere), and the counter deltas. One PTF test class per vector file: Vector_<name>.

Test parameters besides p4runtime_test's: vectors (directory, default test/vectors),
counter_timeout (seconds to wait for counters to settle, default 2).
"""

import glob
import ipaddress
import json
import logging
import os
import sys
import time

from ptf import testutils
from scapy.layers.l2 import Ether

from ina_scapy import INA  # noqa: F401  (binds the INA layer for packet dumps)
from p4runtime_test import ROOT, P4RuntimeTest
from vector_packets import build

NUM_EVENTS = 22
MAX_JOBS = 1024
ETH_HEADER_LEN = 14
EVENTS = ["claimed", "aggregated", "completed", "duplicate", "flushed", "collision", "preempted",
          "evicted", "stale", "resend_forwarded", "bypass", "result", "transit",
          "drop_unknown_job", "drop_bad_port", "drop_slot_range", "drop_malformed",
          "drop_version", "overflow", "ecn_marked", "ipv4_forwarded", "ipv4_dropped"]
SETTINGS_DEFAULT = {"preempt": True, "release_on_result": False, "ecn_threshold": 524287,
                    "active_slots": 1024}


def mac(s):
    return int(s.replace(":", ""), 16)


def ip(s):
    return int(ipaddress.IPv4Address(s))


def add(a, b):
    return (a[0] + b[0], a[1] + b[1])


def dump(frame):
    try:
        return Ether(frame).show(dump=True)
    except Exception:  # a frame scapy cannot dissect is shown raw
        return frame.hex()


class VectorTest(P4RuntimeTest):
    """Base class; the generated subclasses set `vector_path` and `runTest = run_vector`."""

    vector_path = None

    def run_vector(self):
        with open(self.vector_path, encoding="utf-8") as f:
            vec = json.load(f)
        self.push_pipeline()
        self.install(vec.get("setup", {}))
        # Jobs whose every event is checked: those with an ina_ps entry, and any a step names.
        jobs = {int(p["job"]) for p in vec.get("setup", {}).get("ps", [])}
        for step in vec["steps"]:
            jobs.update(int(j) for j in (step.get("counters") or {}).get("jobs", {}))
        self.jobs = sorted(j for j in jobs if j < MAX_JOBS)
        for n, step in enumerate(vec["steps"]):
            self.run_step(vec["name"], n, step)

    def install(self, setup):
        settings = dict(SETTINGS_DEFAULT)
        settings.update(setup.get("settings") or {})
        self.set_default_action("ina_settings", "ina_set_settings", {
            "preempt": int(bool(settings["preempt"])),
            "release_on_result": int(bool(settings["release_on_result"])),
            "ecn_threshold": settings["ecn_threshold"],
            "active_slots": settings["active_slots"]})
        for r in setup.get("ipv4", []):
            net = ipaddress.IPv4Network(r["prefix"])
            self.insert_table_entry("ipv4_lpm", {"hdr.ipv4.dst_addr": (int(net.network_address), net.prefixlen)},
                                    "ipv4_forward", {"dst_mac": mac(r["dst_mac"]), "port": r["port"]})
        for p in setup.get("ps", []):
            self.insert_table_entry("ina_ps", {"hdr.ina.job_id": p["job"]}, "ina_set_ps",
                                    {"port": p["port"], "mac": mac(p["mac"]), "ip": ip(p["ip"])})
        job_keys = [mf.name for mf in self._get("tables", "ina_job").match_fields]
        for j in setup.get("jobs", []):
            match = {"hdr.ina.job_id": j["job"], job_keys[1]: j["port"], job_keys[2]: j.get("member", 0)}
            role = j["role"]
            if role == "worker":
                self.insert_table_entry("ina_job", match, "ina_worker", {
                    "worker_bit": 1 << j["worker_bit"], "fan_in": j["fan_in"],
                    "priority_cap": j["priority_cap"], "ina_enabled": int(bool(j["ina_enabled"]))})
            elif role == "result":
                self.insert_table_entry("ina_job", match, "ina_result", {"mcast_group": j["mcast_group"]})
            elif role == "transit":
                self.insert_table_entry("ina_job", match, "ina_transit")
            else:
                self.fail("unknown role %r" % role)
        for g in setup.get("mcast", []):
            self.insert_multicast_group(g["group"], g["ports"])
        for u in setup.get("unicast", []):
            self.insert_table_entry("ina_unicast", {"hdr.ina.job_id": u["job"], "hdr.ina.bitmap": 1 << u["worker_bit"]},
                                    "ina_unicast_port", {"port": u["port"]})

    def read_events(self):
        """Event counters as the protocol defines them. The TNA build keeps egress's ecn_marked in
        ina_egress_events / ina_job_egress_events and a victim's evicted in ina_job_evicted (a
        Tofino extern belongs to one gress and takes one index per pass): they are added in."""
        snap = {"global": self.read_counters("ina_events", range(NUM_EVENTS))}
        if self.has_counter("ina_egress_events"):
            eg = self.read_counters("ina_egress_events", range(NUM_EVENTS))
            snap["global"] = {e: add(snap["global"][e], eg[e]) for e in range(NUM_EVENTS)}
        if self.jobs:
            # A job's cells start at job * stride: NUM_EVENTS on v1model, 32 on TNA (a shift).
            stride = self._get("counters", "ina_job_events").size // MAX_JOBS
            idx = [j * stride + e for j in self.jobs for e in range(NUM_EVENTS)]
            per = self.read_counters("ina_job_events", idx)
            if self.has_counter("ina_job_egress_events"):
                eg = self.read_counters("ina_job_egress_events", idx)
                per = {i: add(per[i], eg[i]) for i in idx}
            evicted = {}
            if self.has_counter("ina_job_evicted"):
                evicted = self.read_counters("ina_job_evicted", self.jobs)
            for j in self.jobs:
                snap[str(j)] = {e: per[j * stride + e] for e in range(NUM_EVENTS)}
                if j in evicted:
                    snap[str(j)][EVENTS.index("evicted")] = add(snap[str(j)][EVENTS.index("evicted")], evicted[j])
        return snap

    def expected_deltas(self, counters):
        want = {"global": [0] * NUM_EVENTS}
        for j in self.jobs:
            want[str(j)] = [0] * NUM_EVENTS
        for name, n in (counters or {}).get("global", {}).items():
            want["global"][EVENTS.index(name)] = n
        for job, evs in (counters or {}).get("jobs", {}).items():
            if job not in want:
                self.fail("job %s outside the ina_job_events counter" % job)
            for name, n in evs.items():
                want[job][EVENTS.index(name)] = n
        return want

    @staticmethod
    def deltas(before, after, which=0):
        """Per-event deltas of packets (which=0) or bytes (which=1)."""
        return {k: [after[k][e][which] - before[k][e][which] for e in range(NUM_EVENTS)] for k in after}

    def run_step(self, vname, n, step):
        where = "%s step %d (%s)" % (vname, n, step.get("comment", ""))
        for job in step.get("delete_ps", []):
            self.delete_table_entry("ina_ps", {"hdr.ina.job_id": job})
        before = self.read_events()
        want = self.expected_deltas(step.get("counters"))
        frame = build(step["in"]["packet"])
        if len(frame) < ETH_HEADER_LEN:
            # The kernel refuses to send a frame shorter than the link header on a veth, so such a
            # step cannot be run on a real port (the Go suite runs it against the model).
            msg = "SKIP: %s: a %d-byte frame cannot be sent on a veth" % (where, len(frame))
            logging.warning(msg)
            print(msg, file=sys.stderr)
            return
        testutils.send_packet(self, step["in"]["port"], frame)

        per_port = {}
        for o in step.get("out", []):
            per_port.setdefault(o["port"], []).append(build(o["packet"]))
        for port, frames in sorted(per_port.items()):
            for i, exp in enumerate(frames):
                res = testutils.dp_poll(self, device_number=0, port_number=port)
                if isinstance(res, self.dataplane.PollFailure):
                    self.fail("%s: expected packet %d on port %d did not arrive:\n%s"
                              % (where, i, port, dump(exp)))
                if bytes(res.packet) != exp:
                    self.fail("%s: packet %d on port %d differs.\nexpected:\n%s\ngot:\n%s"
                              % (where, i, port, dump(exp), dump(bytes(res.packet))))

        # Counters settle shortly after the packet was processed (at once where it left).
        # Every event a step causes counts the length of the frame it sent (test/vectors/README.md).
        want_bytes = {k: [n * len(frame) for n in v] for k, v in want.items()}
        timeout = float(testutils.test_param_get("counter_timeout", 2))
        deadline = time.time() + timeout
        while True:
            after = self.read_events()
            got, got_bytes = self.deltas(before, after), self.deltas(before, after, 1)
            if (got == want and got_bytes == want_bytes) or time.time() > deadline:
                break
            time.sleep(0.05)
        for key in want:
            diff = {EVENTS[e]: (got[key][e], want[key][e]) for e in range(NUM_EVENTS) if got[key][e] != want[key][e]}
            if diff:
                self.fail("%s: counter deltas for %s differ, event: (got, want): %s" % (where, key, diff))
            diff = {EVENTS[e]: (got_bytes[key][e], want_bytes[key][e])
                    for e in range(NUM_EVENTS) if got_bytes[key][e] != want_bytes[key][e]}
            if diff:
                self.fail("%s: byte counter deltas for %s differ, event: (got, want): %s" % (where, key, diff))
        testutils.verify_no_other_packets(self)


def _load():
    vdir = testutils.test_param_get("vectors", os.path.join(ROOT, "test", "vectors"))
    paths = sorted(glob.glob(os.path.join(vdir, "*.json")))
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        cls = type("Vector_" + name, (VectorTest,),
                   {"vector_path": path, "runTest": VectorTest.run_vector, "__doc__": "vector " + name})
        globals()[cls.__name__] = cls
    return paths


VECTORS = _load()
