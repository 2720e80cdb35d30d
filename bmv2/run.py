#!/usr/bin/env python3
"""Start an INA topology in Mininet, in the p4lang/tutorials way.

    sudo python3 bmv2/run.py --topology bmv2/topologies/one-rack/topology.json [--switch auto|bmv2|ref]
        [--test] [--no-cli]

Hosts come from topology.json; each switch is simple_switch_grpc (BMv2) or the reference switch; the
controller (build/bin/inactl) gets a config derived from the topology (`inactl derive`) and keeps it
installed. Without --test you get the Mininet prompt; with --test one all-reduce per job runs through
the switches and the run fails unless every sum is exact.
"""

import argparse
import atexit
import json
import os
import signal
import subprocess
import sys
import time

from mininet.cli import CLI
from mininet.log import info, setLogLevel
from mininet.net import Mininet
from mininet.topo import Topo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ina_switches import BMv2Switch, RefSwitch, free_port, wait_listening  # noqa: E402

BIN = os.environ.get("INA_BIN", "build/bin")
STATE = "build/mininet"


def parse_endpoint(ep, hosts):
    if ep in hosts:
        return ep, None
    name, _, port = ep.rpartition("-p")
    return name, int(port)


class JSONTopo(Topo):
    """Hosts, switches and numbered links from topology.json."""

    def build(self, topo, switch_cls):
        for name, h in sorted(topo["hosts"].items()):
            self.addHost(name, ip=h["ip"], mac=h["mac"])
        for i, (name, s) in enumerate(sorted(topo["switches"].items())):
            # Mininet wants a datapath id; names like "spine" carry no number to derive one from.
            self.addSwitch(name, cls=switch_cls, device_id=s.get("device_id", 1), dpid="%x" % (i + 1))
        for link in topo["links"]:
            a, pa = parse_endpoint(link[0], topo["hosts"])
            b, pb = parse_endpoint(link[1], topo["hosts"])
            opts = {}
            if pa is not None:
                opts["port1"] = pa
            if pb is not None:
                opts["port2"] = pb
            self.addLink(a, b, **opts)


def choose_switch(kind):
    if kind == "bmv2" or (kind == "auto" and BMv2Switch.available()):
        if not BMv2Switch.available():
            sys.exit("SKIP: SWITCH=bmv2 needs simple_switch_grpc on PATH and build/ina.json (make p4)")
        return BMv2Switch
    if not RefSwitch.available():
        sys.exit("run.py: %s missing; run make build first" % RefSwitch.binary)
    return RefSwitch


def configure_hosts(net, topo):
    """No IPv6 chatter, static ARP for every other host (the switches do not answer ARP), then the
    topology's own host commands."""
    for name in topo["hosts"]:
        h = net.get(name)
        h.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        for other, o in topo["hosts"].items():
            if other != name:
                h.cmd("arp -i %s -s %s %s" % (h.defaultIntf(), o["ip"].split("/")[0], o["mac"]))
        for c in topo["hosts"][name].get("commands", []):
            h.cmd(c)


def start_controller(net, topo_path, topo, switch_cls):
    eps = {}
    for name in topo["switches"]:
        s = net.get(name)
        ep = {"address": s.grpc_addr, "target": "bmv2" if switch_cls is BMv2Switch else "ref"}
        if switch_cls is BMv2Switch:
            ep["device_config"] = "build/ina.json"
            ep["thrift_address"] = "127.0.0.1:%d" % s.thrift_port
        eps[name] = ep
    ep_path = os.path.join(STATE, "endpoints.json")
    cfg_path = os.path.join(STATE, "config.yaml")
    with open(ep_path, "w") as f:
        json.dump(eps, f, indent=2)
    api, metrics = free_port(), free_port()
    subprocess.check_call([BIN + "/inactl", "derive", "--topology", topo_path, "--endpoints", ep_path, "-o", cfg_path,
                           "--api-address", "127.0.0.1:%d" % api, "--metrics-address", "127.0.0.1:%d" % metrics])
    subprocess.check_call([BIN + "/inactl", "apply", "--config", cfg_path])
    log = open(os.path.join(STATE, "inactl.log"), "w")
    proc = subprocess.Popen([BIN + "/inactl", "run", "--config", cfg_path], stdout=log, stderr=subprocess.STDOUT)
    if not wait_listening(api, proc):
        sys.exit("run.py: the controller did not start; see %s/inactl.log" % STATE)
    info("*** controller: config %s, job API 127.0.0.1:%d, metrics 127.0.0.1:%d\n" % (cfg_path, api, metrics))
    return proc, api


def host_ip(topo, name):
    return topo["hosts"][name]["ip"].split("/")[0]


def allreduce_test(net, topo, iters=3, size=4096):
    """One all-reduce per job, every job at once; each worker checks its results exactly."""
    ps_procs, workers = [], []
    for job in topo["ina"]["jobs"]:
        ps = net.get(job["ps"])
        n = len(job["workers"])
        ps_procs.append(ps.popen([BIN + "/ina-ps", "--iface", str(ps.defaultIntf()), "--ip", host_ip(topo, job["ps"]),
                                  "--job", "%d:%d" % (job["id"], n)]))
    time.sleep(0.5)
    for job in topo["ina"]["jobs"]:
        n = len(job["workers"])
        for rank, w in enumerate(job["workers"]):
            h = net.get(w)
            cmd = [BIN + "/ina-worker", "--iface", str(h.defaultIntf()), "--job", str(job["id"]), "--rank", str(rank),
                   "--workers", str(n), "--size", str(size), "--iters", str(iters), "--seed", "7", "--quiet",
                   "--ip", host_ip(topo, w), "--ps-ip", host_ip(topo, job["ps"]),
                   "--ps-mac", topo["hosts"][job["ps"]]["mac"], "--slot-base", "0", "--window", "8",
                   "--priority", str(job.get("priority_cap", 0)), "--progress-timeout", "20s"]
            workers.append(("job %d rank %d" % (job["id"], rank), h.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    ok = True
    for label, p in workers:
        out, _ = p.communicate(timeout=180)
        text = out.decode(errors="replace").strip()
        print("%s: %s" % (label, text.splitlines()[-1] if text else "(no output)"))
        if p.returncode != 0:
            ok = False
            print(text)
    for p in ps_procs:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="bmv2/topologies/one-rack/topology.json")
    ap.add_argument("--switch", default=os.environ.get("SWITCH", "auto").strip() or "auto", choices=["auto", "bmv2", "ref"])
    ap.add_argument("--test", action="store_true", help="run one all-reduce per job and exit with its verdict")
    ap.add_argument("--no-cli", action="store_true", help="start everything, then wait for Ctrl-C instead of a prompt")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("SKIP: Mininet needs root")
    setLogLevel("info")
    os.makedirs(STATE, exist_ok=True)
    with open(args.topology) as f:
        topo = json.load(f)
    switch_cls = choose_switch(args.switch)
    net = Mininet(topo=JSONTopo(topo=topo, switch_cls=switch_cls), controller=None, autoSetMacs=False)
    ctl = None

    def cleanup():
        if ctl and ctl.poll() is None:
            ctl.terminate()
        net.stop()

    atexit.register(cleanup)
    net.start()
    configure_hosts(net, topo)
    ctl, _ = start_controller(net, args.topology, topo, switch_cls)
    with open(os.path.join(STATE, "pids"), "w") as f:
        f.write("%d\n" % ctl.pid)
    if args.test:
        ok = allreduce_test(net, topo)
        print("mininet test %s: %s (%s)" % (os.path.basename(os.path.dirname(args.topology)), "PASS" if ok else "FAIL",
                                            switch_cls.__name__))
        sys.exit(0 if ok else 1)
    if args.no_cli:
        info("*** running; Ctrl-C to stop\n")
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
        return
    CLI(net)


if __name__ == "__main__":
    main()
