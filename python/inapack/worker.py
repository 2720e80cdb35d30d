"""The worker: all-reduce numpy arrays through the switch, configured like torch.distributed."""

import ctypes
import json
import os

import numpy as np

from . import _lib
from ._lib import ConfigError

# Environment variables read when an argument is not given (torch.distributed's RANK and WORLD_SIZE,
# the rest INAPack's); `make train-demo` (ina-demo -exec) sets all of them.
ENV = {
    "rank": "RANK",
    "world_size": "WORLD_SIZE",
    "job": "INAPACK_JOB",
    "member": "INAPACK_MEMBER",
    "iface": "INAPACK_IFACE",
    "netns": "INAPACK_NETNS",
    "ip": "INAPACK_IP",
    "ps_ip": "INAPACK_PS_IP",
    "ps_mac": "INAPACK_PS_MAC",
    "priority": "INAPACK_PRIORITY",
    "slot_base": "INAPACK_SLOT_BASE",
    "window": "INAPACK_WINDOW",
    "progress_timeout": "INAPACK_PROGRESS_TIMEOUT",
    "scale_bucket": "INAPACK_SCALE_BUCKET",
    "integrity": "INAPACK_INTEGRITY",
    "threads": "INAPACK_THREADS",
}
_INT = {"rank", "world_size", "job", "member", "priority", "slot_base", "window", "scale_bucket", "threads"}
DEFAULTS = {"job": 1, "member": 0, "priority": 0, "slot_base": 0, "window": 16, "ps_ip": "10.0.0.100", "progress_timeout": 0.0,
            "scale_bucket": 0, "integrity": True, "threads": 0}
_BOOL = {"true": True, "1": True, "false": False, "0": False}


def _setting(name, given):
    if given is not None:
        return given
    raw = os.environ.get(ENV[name])
    if raw is None or raw == "":
        return DEFAULTS.get(name)
    if name == "integrity":
        if raw.lower() not in _BOOL:
            raise ConfigError("%s=%r: want true or false" % (ENV[name], raw))
        return _BOOL[raw.lower()]
    try:
        return int(raw) if name in _INT else float(raw) if name == "progress_timeout" else raw
    except ValueError:
        raise ConfigError("%s=%r: want a number" % (ENV[name], raw)) from None


class Worker:
    """One member of one job. All workers of a job must make the same calls in the same order
    with arrays of the same lengths (the data-parallel training contract).

    Every argument falls back to its environment variable (ENV), then to DEFAULTS. rank and
    world_size are required; iface (an interface, opened with AF_PACKET: root or CAP_NET_RAW) and
    ip are required unless fabric is given (a LocalFabric: an in-process PS, for tests). netns
    names the network namespace iface is in when it is not this process's (an emulated host: the
    socket is opened there, the process stays where it is; needs CAP_SYS_ADMIN). member is this
    worker's index among the job's workers behind its host's switch port (0..15; the Kubernetes
    operator sets INAPACK_MEMBER when a node runs several of a job's workers).

    Float32 arrays are summed in fixed point with a scale per bucket of scale_bucket values (rounded
    up to whole packets; 0: the worker's default, 64 packets) that the workers agree on first, so no
    sum overflows; each result value is within inapack.fixedpoint.error_bound of the exact sum (see
    the README). A fixed scale can be forced per call instead.

    integrity (default True) carries a checksum of every packet's values in its last lane, so a
    value corrupted on the way is caught and resent instead of summed (docs/protocol.md,
    "Integrity"); the job's PS and all its workers must agree. A packet then carries
    fixedpoint.chunk_values(integrity) values.

    threads runs the worker on that many threads, each with its own socket and a share of the
    job's window (the chunks whose seq is its index mod threads): a power of two dividing window.
    0 (the default) lets the Go worker choose: one thread per four of the cores the process may use
    (GOMAXPROCS, which follows a container's CPU limit), so one below eight cores.
    """

    def __init__(self, rank=None, world_size=None, *, job=None, member=None, iface=None, netns=None, ip=None, ps_ip=None,
                 ps_mac=None, priority=None, slot_base=None, window=None, progress_timeout=None, scale_bucket=None, integrity=None,
                 threads=None, fabric=None):
        s = {n: _setting(n, v) for n, v in dict(
            rank=rank, world_size=world_size, job=job, member=member, iface=iface, netns=netns, ip=ip, ps_ip=ps_ip, ps_mac=ps_mac,
            priority=priority, slot_base=slot_base, window=window, progress_timeout=progress_timeout,
            scale_bucket=scale_bucket, integrity=integrity, threads=threads).items()}
        for n in ("rank", "world_size"):
            if s[n] is None:
                raise ConfigError("%s not given and %s not set" % (n, ENV[n]))
        if s["scale_bucket"] < 0:
            raise ConfigError("scale_bucket %d is negative" % s["scale_bucket"])
        self.rank, self.world_size, self.job = s["rank"], s["world_size"], s["job"]
        self.scale_bucket, self.integrity = s["scale_bucket"], bool(s["integrity"])
        self.progress_timeout = s["progress_timeout"] or 5.0  # 0: the Go worker's default
        cfg = {k: s[k] for k in ("job", "member", "rank", "world_size", "priority", "slot_base", "window", "progress_timeout",
                                 "integrity", "threads")}
        if fabric is not None:
            cfg["fabric"] = fabric.id
        else:
            if not s["iface"] or not s["ip"]:
                raise ConfigError("iface and ip not given and INAPACK_IFACE / INAPACK_IP not set "
                                  "(or pass fabric=LocalFabric(...) for an in-process PS)")
            cfg.update(iface=s["iface"], netns=s["netns"] or "", ip=s["ip"], ps_ip=s["ps_ip"], ps_mac=s["ps_mac"] or "")
        self._h = _lib.call_id(_lib.lib.inapack_open, json.dumps(cfg).encode())

    def _handle(self):
        if self._h is None:
            raise _lib.WorkerClosedError("inapack: worker closed")
        return self._h

    def allreduce(self, array, *, average=False, scale=None):
        """Sums array (numpy float32 or int32) over the job's workers and returns the result.

        A writable C-contiguous ndarray is reduced in place (the returned array is the same object);
        anything else is copied first. average=True divides by world_size (float32 only). scale
        forces one fixed-point scale for every float value instead of the per-bucket scales.
        """
        a = _as_tensor(array)
        h = self._handle()
        ptr = a.ctypes.data_as(ctypes.c_void_p)
        if a.dtype == np.int32:
            if average or scale is not None:
                raise ConfigError("average and scale apply to float32 arrays only")
            _lib.call(_lib.lib.inapack_allreduce_int32, h, ptr, a.size)
        else:
            _lib.call(_lib.lib.inapack_allreduce_float32, h, ptr, a.size, _scale(scale), self.scale_bucket)
            if average:
                a /= np.float32(self.world_size)
        return a

    def allreduce_many(self, arrays, *, average=False, scale=None):
        """All-reduces a list of float32 and int32 arrays in one pipelined call (the Go worker's
        AllReduceMany: small arrays share packets, and the chunks of all of them share the window)
        and returns the list of results (in place where allreduce would be). Float32 arrays get
        per-bucket scales, each array its own buckets, agreed in one exchange for the whole call."""
        out = [_as_tensor(a) for a in arrays]
        h = self._handle()
        if (average or scale is not None) and any(a.dtype == np.int32 for a in out):
            raise ConfigError("average and scale apply to float32 arrays only")
        n = len(out)
        ptrs = (ctypes.c_void_p * n)(*[a.ctypes.data for a in out])
        lens = (ctypes.c_int64 * n)(*[a.size for a in out])
        floats = (ctypes.c_int * n)(*[int(a.dtype == np.float32) for a in out])
        _lib.call(_lib.lib.inapack_allreduce_many, h, n, ptrs, lens, floats, _scale(scale), self.scale_bucket)
        if average:
            for a in out:
                a /= np.float32(self.world_size)
        return out

    def stats(self):
        """The Go worker's counters (packets sent, retransmissions, overflow results, window, ...)."""
        buf = ctypes.create_string_buffer(4096)
        _lib.call(_lib.lib.inapack_stats, self._handle(), buf, len(buf))
        return json.loads(buf.value)

    def close(self):
        if self._h is not None:
            h, self._h = self._h, None
            _lib.call(_lib.lib.inapack_close, h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            try:
                self.close()
            except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone already
                pass


def _as_tensor(array):
    a = np.asarray(array)
    if a.dtype not in (np.float32, np.int32):
        raise TypeError("inapack: all-reduce takes float32 or int32 arrays, not %s (convert with .astype)" % a.dtype)
    if not (a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, order="C", copy=True)
    return a


def _scale(scale):
    if scale is None:
        return 0.0
    scale = float(scale)
    if not scale > 0 or scale == float("inf"):
        raise ConfigError("scale %r: want a positive finite number" % scale)
    return scale


class LocalFabric:
    """An in-process PS for one job, reached through memory: workers of this process (one per
    thread) all-reduce without root, a switch or a network. For tests and benchmarks."""

    def __init__(self, world_size, *, job=1, window=16, integrity=True):
        self.world_size, self.job, self.window, self.integrity = world_size, job, window, integrity
        self.id = _lib.call_id(_lib.lib.inapack_local_fabric, job, world_size, window, int(integrity))

    def worker(self, rank, **kw):
        kw.setdefault("integrity", self.integrity)
        return Worker(rank, self.world_size, job=self.job, window=self.window, fabric=self, **kw)

    def close(self):
        if self.id is not None:
            i, self.id = self.id, None
            _lib.call(_lib.lib.inapack_fabric_close, i)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_default = None


def init(**kw):
    """Opens the process's default worker (as torch.distributed.init_process_group does) from
    arguments and environment variables; allreduce and allreduce_many below then use it."""
    global _default
    if _default is not None:
        _default.close()
    _default = Worker(**kw)
    return _default


def _worker():
    if _default is None:
        raise ConfigError("inapack.init() has not been called")
    return _default


def allreduce(array, **kw):
    """Worker.allreduce on the default worker (inapack.init)."""
    return _worker().allreduce(array, **kw)


def allreduce_many(arrays, **kw):
    """Worker.allreduce_many on the default worker (inapack.init)."""
    return _worker().allreduce_many(arrays, **kw)
