"""Mininet node and link classes for the INA pipeline: BMv2 (simple_switch_grpc) and the reference
switch, hosts and links that record what they create (owned.py).

Both switches run in the root namespace on the switch's veth ends and serve P4Runtime on a loopback
port, so the same controller configures either. Neither needs Open vSwitch. Their root-namespace
interfaces are named from a prefix unique to the run (not Mininet's s1-eth1), because Mininet
deletes any interface of the name it is about to create: with shared names, two runs on one host
would take each other's links.
"""

import os
import shutil
import socket
import subprocess
import time

from mininet.link import Link, TCLink
from mininet.log import error, info
from mininet.node import Host, Switch

import owned


def free_port():
    """A TCP port nothing listens on now (gRPC binds with SO_REUSEPORT, so check first)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=20.0):
    """Wait until 127.0.0.1:port accepts connections, failing early if proc died."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


class INASwitch(Switch):
    """Common part: port list, process lifecycle, log file, gRPC address."""

    log_dir = "build/mininet"

    def __init__(self, name, grpc_port=None, device_id=1, intf_prefix=None, **kwargs):
        Switch.__init__(self, name, **kwargs)
        owned.record_proc("shell " + name, self.pid)
        self.grpc_port = grpc_port or free_port()
        self.device_id = device_id
        self.intf_prefix = intf_prefix or name + "-eth"
        self.proc = None

    def intf_name(self, port):
        return self.intf_prefix + str(port)

    @property
    def grpc_addr(self):
        return "127.0.0.1:%d" % self.grpc_port

    def port_args(self):
        """-i N@ifname for every data-plane port, as BMv2 users write them."""
        args = []
        for port, intf in sorted(self.intfs.items()):
            if intf.name == "lo":
                continue
            args += ["-i", "%d@%s" % (port, intf.name)]
        return args

    def command(self):
        raise NotImplementedError

    def start(self, controllers):
        os.makedirs(self.log_dir, exist_ok=True)
        for intf in self.intfList():
            if intf.name != "lo":
                # No IPv6 chatter on switch ports: it would show up as unknown traffic.
                self.cmd("sysctl -qw net.ipv6.conf.%s.disable_ipv6=1" % intf.name)
        cmd = self.command()
        info("*** starting %s: %s\n" % (self.name, " ".join(cmd)))
        log = open(os.path.join(self.log_dir, self.name + ".log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        owned.record_proc(self.name, self.proc.pid)
        if not wait_listening(self.grpc_port, self.proc):
            error("*** %s did not open %s; see %s/%s.log\n" % (self.name, self.grpc_addr, self.log_dir, self.name))
            raise RuntimeError("%s did not start; see %s/%s.log" % (self.name, self.log_dir, self.name))

    def stop(self, deleteIntfs=True):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        Switch.stop(self, deleteIntfs)


class BMv2Switch(INASwitch):
    """simple_switch_grpc with no program: the controller pushes build/ina.json and its P4Info."""

    binary = "simple_switch_grpc"

    def __init__(self, name, thrift_port=None, **kwargs):
        INASwitch.__init__(self, name, **kwargs)
        self.thrift_port = thrift_port or free_port()

    @classmethod
    def available(cls):
        return shutil.which(cls.binary) is not None and os.path.exists("build/ina.json")

    def command(self):
        return [self.binary, "--no-p4", "--device-id", str(self.device_id),
                "--thrift-port", str(self.thrift_port)] + self.port_args() + [
                "--", "--grpc-server-addr", self.grpc_addr, "--cpu-port", "255"]


class RefSwitch(INASwitch):
    """The reference switch (Go model of the P4 program on AF_PACKET ports)."""

    binary = os.path.join(os.environ.get("INA_BIN", "build/bin"), "refswitch")

    @classmethod
    def available(cls):
        return os.path.exists(cls.binary)

    def command(self):
        return [self.binary, "--grpc-addr", self.grpc_addr, "--device-id", str(self.device_id)] + self.port_args()


class OwnedHost(Host):
    """A Mininet host whose shell (and so its namespace) is recorded for make stop."""

    def __init__(self, name, **kwargs):
        Host.__init__(self, name, **kwargs)
        owned.record_proc("host " + name, self.pid)


class OwnedLink(Link):
    """A link whose root-namespace ends get the switch's run-unique names, recorded before they are
    created."""

    def intfName(self, node, n):
        name = node.intf_name(n) if isinstance(node, INASwitch) else Link.intfName(self, node, n)
        if not node.inNamespace:
            owned.record_link(name)
        return name


class OwnedTCLink(TCLink):
    """OwnedLink with tc shaping: the rate and latency a topology.json link gives."""

    intfName = OwnedLink.intfName
