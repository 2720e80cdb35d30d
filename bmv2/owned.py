#!/usr/bin/env python3
"""What one Mininet run created, and how to remove exactly that.

run.py records in STATE/run.json, as it creates them, every process it starts (Mininet's node
shells, the switches, the controller, job agents) and every interface it names in the root
namespace. `owned.py stop STATE` (make stop) asks a live run to end, then removes what a dead run
left. Nothing else on the host is touched: other checkouts and other users run Mininet, BMv2 and
network-namespace tests on the same machine. A process is identified by PID and start time, so a
PID the kernel has reused is never taken for ours.

    python3 bmv2/owned.py stop [STATE]     (default build/mininet)
"""

import json
import os
import signal
import subprocess
import sys
import time


def proc_start(pid):
    """The process's start time (clock ticks since boot), or None if it is gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 1:].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(pid, start):
    return start is not None and proc_start(pid) == start


class OwnedError(Exception):
    """Another live run owns the state directory."""


class Ledger:
    def __init__(self, state_dir):
        self.path = os.path.join(state_dir, "run.json")
        self.rec = {"pid": os.getpid(), "start": proc_start(os.getpid()), "procs": [], "links": []}

    def read(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as e:
            raise OwnedError("%s: %s (remove it once nothing it names runs)" % (self.path, e))

    def claim(self, say):
        """Take the state directory: refuse if a live run owns it, clean up after a dead one."""
        old = self.read()
        if old is not None:
            if alive(old.get("pid", 0), old.get("start")):
                raise OwnedError("a run from this checkout is still going (pid %d); stop it first: make stop"
                                 % old["pid"])
            removed = cleanup(old)
            if removed:
                say("removed what an earlier run (pid %d) left: %s" % (old["pid"], removed))
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.rec, f, indent=1)
        os.replace(tmp, self.path)

    def add_proc(self, name, pid):
        start = proc_start(pid)
        if start is not None:
            self.rec["procs"].append({"name": name, "pid": pid, "start": start})
            self.save()

    def add_link(self, name):
        self.rec["links"].append(name)
        self.save()

    def release(self):
        """Remove what is still there and the record."""
        cleanup(self.rec)
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


def cleanup(rec):
    """Kill the recorded processes that still run, delete the recorded links that still exist."""
    procs = links = 0
    for p in rec.get("procs", []):
        if alive(p["pid"], p["start"]):
            try:
                os.kill(p["pid"], signal.SIGKILL)
                procs += 1
            except ProcessLookupError:
                pass
    for name in rec.get("links", []):
        if subprocess.call(["ip", "link", "del", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            links += 1
    if procs + links == 0:
        return ""
    return "%d processes, %d links" % (procs, links)


# The ledger of the run in this process (set by run.py), for the node and link classes.
current = None


def record_proc(name, pid):
    if current is not None:
        current.add_proc(name, pid)


def record_link(name):
    if current is not None:
        current.add_link(name)


def stop(state_dir):
    """make stop: end this checkout's run and remove what it owns."""
    led = Ledger(state_dir)
    try:
        rec = led.read()
    except OwnedError as e:
        print("stop: %s" % e)
        return 1
    if rec is None:
        print("stop: no run recorded in %s" % state_dir)
        return 0
    pid = rec.get("pid", 0)
    if os.geteuid() != 0:
        print("stop: the run (pid %d) is root's: run make stop as root, or with sudo" % pid)
        return 1
    if alive(pid, rec.get("start")):
        # run.py stops Mininet, its switches and the controller itself on SIGTERM.
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 30
        while time.time() < deadline and alive(pid, rec.get("start")):
            time.sleep(0.2)
        if alive(pid, rec.get("start")):
            os.kill(pid, signal.SIGKILL)
        rec = led.read() or {}
    removed = cleanup(rec)
    try:
        os.remove(led.path)
    except FileNotFoundError:
        pass
    print("stopped the run of pid %d%s" % (pid, " (removed leftovers: %s)" % removed if removed else ""))
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or sys.argv[1] != "stop":
        sys.exit("usage: owned.py stop [STATE_DIR]")
    sys.exit(stop(sys.argv[2] if len(sys.argv) == 3 else "build/mininet"))
