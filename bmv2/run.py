#!/usr/bin/env python3
"""Start an INA topology in Mininet, in the p4lang/tutorials way.

    sudo python3 bmv2/run.py [--topology NAME|DIR|FILE] [--switch auto|bmv2|ref] [--job ID]
        [--test] [--no-cli] [--state-dir DIR]

Hosts come from topology.json; each switch is simple_switch_grpc (BMv2) or the reference switch; the
controller (build/bin/inactl) gets a config derived from the topology (`inactl derive`) and keeps it
installed. The topology is checked with `inactl derive --check` before anything is built.

Without --test you get the Mininet prompt, where `job ID` runs a job's PS and workers (--job ID
does so once before the prompt opens); with --test one all-reduce per job runs through the
switches and the run fails unless every sum is exact. Everything the run starts is recorded in
STATE/run.json and removed on exit; `make stop` (bmv2/owned.py) ends the run from another shell.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import owned  # noqa: E402

BIN = os.environ.get("INA_BIN", "build/bin")
TOPOLOGIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topologies")


class UserError(Exception):
    """Something the user can fix: printed as one message, never as a traceback."""


class Stopped(Exception):
    """SIGTERM, from make stop: leave through the same clean-up as exit or Ctrl-D."""


def say(msg):
    print("*** " + msg, flush=True)


def resolve_topology(arg):
    """A shipped topology's name, a directory holding topology.json, or a topology.json path."""
    for path in (arg, os.path.join(arg, "topology.json"), os.path.join(TOPOLOGIES, arg, "topology.json")):
        if os.path.isfile(path):
            return path
    names = sorted(d for d in os.listdir(TOPOLOGIES) if os.path.isfile(os.path.join(TOPOLOGIES, d, "topology.json")))
    raise UserError("no topology %r; the shipped topologies are: %s (or give a directory or a topology.json path)"
                    % (arg, ", ".join(names)))


def inactl(*args):
    path = os.path.join(BIN, "inactl")
    if not os.access(path, os.X_OK):
        raise UserError("%s is missing; run make build first" % path)
    r = subprocess.run([path] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise UserError(r.stdout.strip().replace("inactl: ", "", 1))
    return r.stdout


def parse_endpoint(ep, hosts):
    if ep in hosts:
        return ep, None
    name, _, port = ep.rpartition("-p")
    return name, int(port)


def link_shaping(link):
    """The tutorials' optional third and fourth link elements, latency and Mbit/s, as tc shaping on
    both ends (Mininet's TCLink); none for a link without them."""
    latency = link[2] if len(link) > 2 else "0ms"
    if isinstance(latency, (int, float)):
        latency = "%gms" % latency
    mbps = link[3] if len(link) > 3 else 0
    opts = {}
    if latency not in ("", "0ms", "0"):
        opts["delay"] = latency
    if mbps:
        opts["bw"] = mbps
        # tbf (htb warns that its quantum is big at these rates), with a 50 ms queue rather than
        # Mininet's 120 ms / Mbit/s, so that a window of packets from several workers is not dropped.
        opts.update(use_tbf=True, latency_ms=50)
    if opts:
        import ina_switches
        opts["cls"] = ina_switches.OwnedTCLink
    return opts


def intf_tag():
    """A prefix for the switches' root-namespace interfaces that no interface on the host uses."""
    names = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE, text=True).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in names.splitlines() if ":" in line]
    while True:
        tag = "m%04x" % random.getrandbits(16)
        if not any(n.startswith(tag) for n in names):
            return tag


def choose_switch(kind, sw):
    if kind == "bmv2" or (kind == "auto" and sw.BMv2Switch.available()):
        if not sw.BMv2Switch.available():
            raise UserError("SWITCH=bmv2 needs simple_switch_grpc on PATH and build/ina.json (make p4)")
        return sw.BMv2Switch
    if kind == "auto" and shutil.which(sw.BMv2Switch.binary):
        say("simple_switch_grpc is installed but the program is not compiled (make p4): using the reference switch")
    if not sw.RefSwitch.available():
        raise UserError("%s is missing; run make build first" % sw.RefSwitch.binary)
    return sw.RefSwitch


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


def start_controller(state, cfg_path, api):
    inactl("apply", "--config", cfg_path)
    log = open(os.path.join(state, "inactl.log"), "w")
    proc = subprocess.Popen([os.path.join(BIN, "inactl"), "run", "--config", cfg_path], stdout=log,
                            stderr=subprocess.STDOUT)
    owned.record_proc("inactl", proc.pid)
    from ina_switches import wait_listening
    if not wait_listening(api, proc):
        raise UserError("the controller did not start; see %s/inactl.log" % state)
    return proc


def host_ip(topo, name):
    return topo["hosts"][name]["ip"].split("/")[0]


def run_jobs(net, topo, ids, iters, size):
    """Run the given jobs at once: each PS and worker on its host, every worker checking its
    results exactly. Prints one line per worker; returns whether all were exact."""
    jobs = [j for j in topo["ina"]["jobs"] if j["id"] in ids]
    ps_procs, workers = [], []
    for job in jobs:
        ps = net.get(job["ps"])
        p = ps.popen([BIN + "/ina-ps", "--iface", str(ps.defaultIntf()), "--ip", host_ip(topo, job["ps"]),
                      "--job", "%d:%d" % (job["id"], len(job["workers"]))])
        owned.record_proc("ps job %d" % job["id"], p.pid)
        ps_procs.append(p)
    time.sleep(0.5)
    for job in jobs:
        n = len(job["workers"])
        for rank, w in enumerate(job["workers"]):
            h = net.get(w)
            # A host listed k times runs k workers, members 0..k-1 in rank order (topology.MemberIndices).
            member = job["workers"][:rank].count(w)
            cmd = [BIN + "/ina-worker", "--iface", str(h.defaultIntf()), "--job", str(job["id"]), "--rank", str(rank),
                   "--member", str(member), "--workers", str(n), "--size", str(size), "--iters", str(iters), "--seed", "7", "--quiet",
                   "--ip", host_ip(topo, w), "--ps-ip", host_ip(topo, job["ps"]),
                   "--ps-mac", topo["hosts"][job["ps"]]["mac"], "--slot-base", "0", "--window", "8",
                   "--priority", str(job.get("priority_cap", 0)), "--progress-timeout", "20s"]
            p = h.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            owned.record_proc("worker job %d rank %d" % (job["id"], rank), p.pid)
            workers.append(("job %d rank %d (%s)" % (job["id"], rank, w), p))
    ok = True
    for label, p in workers:
        try:
            out, _ = p.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
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


def job_list(topo):
    return "; ".join("job %d: PS %s, workers %s, priority cap %s" % (
        j["id"], j["ps"], " ".join(j["workers"]), j.get("priority_cap", 0)) for j in topo["ina"]["jobs"])


def guidance(topo, switch_name, api, metrics):
    jobs = topo["ina"]["jobs"]
    first = jobs[0]["id"] if jobs else 1
    a, b = (jobs[0]["workers"][0], jobs[0]["ps"]) if jobs else sorted(topo["hosts"])[:2]
    return "\n".join([
        "",
        "*** INA on %s. This topology's jobs: %s" % (switch_name, job_list(topo)),
        "*** At the mininet> prompt:",
        "***   job                 list the jobs",
        "***   %-19s run job %d: its PS and workers all-reduce ITERS times (default 10), every sum checked"
        % ("job %d [ITERS]" % first, first),
        "***   %-19s any command on a host, as in Mininet (agents: %s/ina-worker -h, %s/ina-ps -h)"
        % ("%s ping -c1 %s" % (a, b), BIN, BIN),
        "***   exit                stop everything (or make stop from another shell)",
        "*** Controller: %s/inactl status --api 127.0.0.1:%d; metrics http://127.0.0.1:%d/metrics" % (BIN, api, metrics),
        "",
    ])


def make_cli(CLI, net, topo, banner):
    class INACLI(CLI):
        prompt = "mininet> "

        def __init__(self, *args, **kwargs):
            print(banner)
            CLI.__init__(self, *args, **kwargs)

        def do_job(self, line):
            """job: list the jobs. job ID [ITERS]: run job ID's PS and workers, every sum checked."""
            f = line.split()
            if not f:
                print(job_list(topo))
                return
            try:
                jid, iters = int(f[0]), int(f[1]) if len(f) > 1 else 10
            except ValueError:
                print("usage: job [ID [ITERS]]")
                return
            if jid not in [j["id"] for j in topo["ina"]["jobs"]]:
                print("no job %d; %s" % (jid, job_list(topo)))
                return
            ok = run_jobs(net, topo, [jid], iters, 4096)
            print("job %d: %s" % (jid, "every sum exact" if ok else "FAILED (output above)"))

    return INACLI(net)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="one-rack", help="a name in bmv2/topologies, a directory, or a topology.json")
    ap.add_argument("--switch", default=os.environ.get("SWITCH", "auto").strip() or "auto", choices=["auto", "bmv2", "ref"])
    ap.add_argument("--job", type=int, help="run this job's PS and workers once before the prompt opens")
    ap.add_argument("--test", action="store_true", help="run one all-reduce per job and exit with its verdict")
    ap.add_argument("--no-cli", action="store_true", help="start everything, then wait for Ctrl-C instead of a prompt")
    ap.add_argument("--state-dir", default=os.environ.get("INA_STATE", "build/mininet"),
                    help="where the config, the logs and the record of what this run owns go")
    args = ap.parse_args()
    try:
        return run(args)
    except (UserError, owned.OwnedError) as e:
        print("run: %s" % e, file=sys.stderr)
        return 1
    except Stopped:
        say("stopped (make stop)")
        return 0
    except KeyboardInterrupt:
        return 130


def run(args):
    topo_path = resolve_topology(args.topology)
    inactl("derive", "--check", "--topology", topo_path)
    with open(topo_path) as f:
        topo = json.load(f)
    for key, empty in (("hosts", {}), ("switches", {}), ("links", []), ("ina", {})):
        topo[key] = topo.get(key) or empty
    topo["ina"]["jobs"] = topo["ina"].get("jobs") or []
    if args.job is not None and args.job not in [j["id"] for j in topo["ina"]["jobs"]]:
        raise UserError("no job %d in %s; %s" % (args.job, topo_path, job_list(topo)))
    if os.geteuid() != 0:
        raise UserError("Mininet needs root: run as root, or with sudo env \"PATH=$PATH\"")
    try:
        from mininet.cli import CLI
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.topo import Topo
    except ImportError:
        raise UserError("Mininet is not installed for %s (Debian: apt-get install mininet)" % sys.executable)
    import ina_switches

    switch_cls = choose_switch(args.switch, ina_switches)
    state = args.state_dir
    os.makedirs(state, exist_ok=True)
    ina_switches.INASwitch.log_dir = state
    ledger = owned.Ledger(state)
    ledger.claim(say)
    owned.current = ledger

    # Everything the controller needs is known before the network exists: ports, names, config.
    tag = intf_tag()
    params, eps = {}, {}
    for i, (name, s) in enumerate(sorted(topo["switches"].items())):
        p = {"grpc_port": ina_switches.free_port(), "device_id": s.get("device_id", 1),
             "intf_prefix": "%s%dp" % (tag, i), "dpid": "%x" % (i + 1)}
        eps[name] = {"address": "127.0.0.1:%d" % p["grpc_port"], "target": "ref"}
        if switch_cls is ina_switches.BMv2Switch:
            p["thrift_port"] = ina_switches.free_port()
            eps[name].update(target="bmv2", device_config="build/ina.json", thrift_address="127.0.0.1:%d" % p["thrift_port"])
        params[name] = p
    ep_path, cfg_path = os.path.join(state, "endpoints.json"), os.path.join(state, "config.yaml")
    with open(ep_path, "w") as f:
        json.dump(eps, f, indent=2)
    api, metrics = ina_switches.free_port(), ina_switches.free_port()
    inactl("derive", "--topology", topo_path, "--endpoints", ep_path, "-o", cfg_path,
           "--api-address", "127.0.0.1:%d" % api, "--metrics-address", "127.0.0.1:%d" % metrics)

    class JSONTopo(Topo):
        """Hosts, switches and numbered links from topology.json."""

        def build(self):
            for name, h in sorted(topo["hosts"].items()):
                self.addHost(name, ip=h["ip"], mac=h["mac"])
            for name in sorted(topo["switches"]):
                self.addSwitch(name, cls=switch_cls, **params[name])
            for link in topo["links"]:
                a, pa = parse_endpoint(link[0], topo["hosts"])
                b, pb = parse_endpoint(link[1], topo["hosts"])
                opts = {}
                if pa is not None:
                    opts["port1"] = pa
                if pb is not None:
                    opts["port2"] = pb
                opts.update(link_shaping(link))
                self.addLink(a, b, **opts)

    def stopped(*_):
        raise Stopped()

    signal.signal(signal.SIGTERM, stopped)
    setLogLevel("info")
    net = ctl = None
    try:
        net = Mininet(topo=JSONTopo(), controller=None, autoSetMacs=False, host=ina_switches.OwnedHost,
                      link=ina_switches.OwnedLink, build=False)
        net.build()
        net.start()
        configure_hosts(net, topo)
        ctl = start_controller(state, cfg_path, api)
        say("controller: config %s, job API 127.0.0.1:%d, metrics http://127.0.0.1:%d/metrics" % (cfg_path, api, metrics))
        name = os.path.basename(os.path.dirname(os.path.abspath(topo_path)))
        if args.test:
            ok = run_jobs(net, topo, [j["id"] for j in topo["ina"]["jobs"]], 3, 4096)
            print("mininet test %s: %s (%s)" % (name, "PASS" if ok else "FAIL", switch_cls.__name__))
            return 0 if ok else 1
        if args.job is not None:
            ok = run_jobs(net, topo, [args.job], 10, 4096)
            say("job %d: %s" % (args.job, "every sum exact" if ok else "FAILED (output above)"))
        if args.no_cli:
            say("running; Ctrl-C or make stop to stop")
            signal.pause()
            return 0
        make_cli(CLI, net, topo, guidance(topo, switch_cls.__name__, api, metrics))
        return 0
    except RuntimeError as e:  # a switch that did not start (its log is named above)
        raise UserError(str(e))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if ctl is not None and ctl.poll() is None:
            ctl.terminate()
            try:
                ctl.wait(timeout=5)
            except subprocess.TimeoutExpired:
                ctl.kill()
        if net is not None:
            net.stop()
        ledger.release()


if __name__ == "__main__":
    sys.exit(main())
