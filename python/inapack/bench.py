"""The bridge's overhead: all-reduce time per MiB called from Python (inapack.Worker.allreduce on a
numpy array, through ctypes) vs the same all-reduces run by Go directly (a loop inside
libinapack.so on a Go slice), interleaved in one run over one in-process PS (LocalFabric), each
rank in its own thread; and the fixed cost of one call from Python. Prints a table; the Python/Go
ratio is the number to quote. The in-process PS is the fastest transport there is, so the ratio is
an upper bound of the overhead through a real switch.

    python -m inapack.bench [--workers 1] [--mib 1] [--iters 5] [--rounds 31]

One worker by default: in a real job each rank is its own process, while here ranks are threads of
one process and their Python halves take turns on the GIL, which on a busy machine adds scheduling
delay between the ranks' calls that no real job has (--workers 2 shows it).
"""

import argparse
import ctypes
import os
import statistics
import threading
import time

import numpy as np

from . import _lib
from .worker import LocalFabric


def _parallel(workers, fn):
    out, errs = [None] * len(workers), []

    def go(r):
        try:
            out[r] = fn(workers[r])
        except Exception as e:  # noqa: BLE001 - re-raised below
            errs.append(e)

    ts = [threading.Thread(target=go, args=(r,)) for r in range(len(workers))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]
    return max(out)  # the slowest rank bounds the step


def go_loop(w, n, iters, is_float):
    secs = ctypes.c_double()
    _lib.call(_lib.lib.inapack_bench_go, w._handle(), n, iters, int(is_float), 0.0, w.scale_bucket, ctypes.byref(secs))
    return secs.value


def py_loop(w, n, iters, is_float):
    # The same input as the Go loop, refilled before every call (all-reduce works in place).
    src = (np.arange(n) % 1000).astype(np.float32) / 1024 if is_float else (np.arange(n) % 1000).astype(np.int32)
    a = np.empty_like(src)
    t = time.perf_counter()
    for _ in range(iters):
        np.copyto(a, src)
        w.allreduce(a)
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description="all-reduce time per MiB from Python vs from Go, same run")
    ap.add_argument("--workers", type=int, default=1, help="ranks, one thread each")
    ap.add_argument("--mib", type=float, default=1.0, help="tensor size")
    ap.add_argument("--iters", type=int, default=5, help="all-reduces per measurement")
    ap.add_argument("--rounds", type=int, default=31,
                    help="interleaved Go/Python measurement pairs (many short ones: the best of each filters the "
                         "machine's load out)")
    a = ap.parse_args(argv)
    n = int(a.mib * (1 << 20)) // 4
    mib = n * 4 / (1 << 20)
    print("bench: %d worker(s) on an in-process PS, %.2f MiB tensors, %d all-reduces x %d rounds, interleaved; "
          "load average %.1f on %d CPUs" % (a.workers, mib, a.iters, a.rounds, os.getloadavg()[0], os.cpu_count()))
    print("%-8s %14s %14s %14s %14s %18s" % ("dtype", "go_ms_per_MiB", "py_ms_per_MiB", "py/go_median", "py/go_best",
                                             "overhead_us_per_MiB"))
    with LocalFabric(a.workers, window=64) as fab:
        workers = [fab.worker(r) for r in range(a.workers)]
        for is_float in (True, False):
            _parallel(workers, lambda w: py_loop(w, n, 2, is_float))  # warm up
            go_t, py_t = [], []
            for _ in range(a.rounds):
                go_t.append(_parallel(workers, lambda w: go_loop(w, n, a.iters, is_float)) / (a.iters * mib))
                py_t.append(_parallel(workers, lambda w: py_loop(w, n, a.iters, is_float)) / (a.iters * mib))
            # Each Python measurement is paired with the Go one just before it (the machine's load
            # drifts): the median of the pairs' ratios, and the ratio of the best of each.
            ratio = statistics.median(p / g for p, g in zip(py_t, go_t))
            g, p = min(go_t), min(py_t)
            print("%-8s %14.3f %14.3f %14.3f %14.3f %18.1f" % ("float32" if is_float else "int32", g * 1e3, p * 1e3,
                                                             ratio, p / g, (p - g) * 1e6))
        empty = np.empty(0, np.float32)
        calls = 20000
        t = time.perf_counter()
        for _ in range(calls):
            workers[0].allreduce(empty)
        per_call = (time.perf_counter() - t) / calls
        print("fixed cost of one Python call (empty tensor: numpy checks, ctypes, the Go entry): %.2f us" % (per_call * 1e6))
        for w in workers:
            w.close()


if __name__ == "__main__":
    main()
