"""Loads libinapack.so (the Go worker's C ABI, worker/cabi) with ctypes and maps its statuses to
exceptions. ctypes releases the GIL for the length of every call, so other Python threads (a DDP
hook's caller, a data loader) run while the worker waits for the network."""

import ctypes
import os
from pathlib import Path

# Status codes, as in worker/cabi/status.h.
OK, ERROR, ECONFIG, ENOPROGRESS, EOVERFLOW, ECLOSED = range(6)
_ERRLEN = 2048


class InaError(RuntimeError):
    """An all-reduce or worker failure; the message is the Go error's text."""


class ConfigError(InaError, ValueError):
    """A bad configuration or argument (job, rank, interface, addresses, lengths)."""


class NoProgressError(InaError, TimeoutError):
    """No chunk completed for the progress timeout: the switch, the PS or a peer worker is down or
    unreachable. The worker cannot continue (its sequence numbers no longer match its peers')."""


class SumOverflowError(InaError, OverflowError):
    """An int32 sum does not fit in int32; those values are saturated, every other value is exact."""


class WorkerClosedError(InaError):
    """A previous call failed with NoProgressError; open a new worker (the job must restart)."""


_EXC = {ERROR: InaError, ECONFIG: ConfigError, ENOPROGRESS: NoProgressError, EOVERFLOW: SumOverflowError,
        ECLOSED: WorkerClosedError}


def _candidates():
    env = os.environ.get("INAPACK_LIB")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    # Installed by pip next to this file; or, from a checkout, built by `make pylib`.
    return [here / "libinapack.so", here.parent.parent / "build" / "lib" / "libinapack.so"]


def _load():
    tried = _candidates()
    for p in tried:
        if p.is_file():
            lib = ctypes.CDLL(str(p))
            break
    else:
        raise ImportError(
            "inapack: libinapack.so not found (looked at %s). Install the package with `pip install ./python` "
            "from an INAPack checkout (needs Go), or run `make pylib` there, or point INAPACK_LIB at the library."
            % ", ".join(map(str, tried)))
    i64, i32, f64, cp, vp = ctypes.c_int64, ctypes.c_int, ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p
    sig = {
        "inapack_open": (i32, [cp, ctypes.POINTER(i64), cp, i32]),
        "inapack_close": (i32, [i64, cp, i32]),
        "inapack_allreduce_int32": (i32, [i64, vp, i64, cp, i32]),
        "inapack_allreduce_float32": (i32, [i64, vp, i64, f64, i64, cp, i32]),
        "inapack_allreduce_many": (i32, [i64, i32, ctypes.POINTER(vp), ctypes.POINTER(i64), ctypes.POINTER(i32), f64, i64,
                                         cp, i32]),
        "inapack_stats": (i32, [i64, cp, i32, cp, i32]),
        "inapack_local_fabric": (i32, [i32, i32, i32, i32, ctypes.POINTER(i64), cp, i32]),
        "inapack_fabric_close": (i32, [i64, cp, i32]),
        "inapack_bench_go": (i32, [i64, i64, i32, i32, f64, i64, ctypes.POINTER(f64), cp, i32]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


lib = _load()


def errbuf():
    return ctypes.create_string_buffer(_ERRLEN)


def check(status, buf):
    """Raises the exception for a non-zero status, with the Go error's text."""
    if status != OK:
        raise _EXC.get(status, InaError)(buf.value.decode("utf-8", "replace"))


def call(fn, *args):
    """Calls fn(*args, err, errlen) and raises on failure; returns the status."""
    buf = errbuf()
    check(fn(*args, buf, _ERRLEN), buf)
    return OK


def call_id(fn, *args):
    """Calls a function that writes an id to its out-parameter (before err) and returns the id."""
    out = ctypes.c_int64()
    call(fn, *args, ctypes.byref(out))
    return out.value
