"""all_reduce time of the torch.distributed backend "inapack" against gloo on the same processes:
run under torchrun with init_process_group("inapack") as the default group and a gloo group of
the same ranks beside it, the two timed in interleaved rounds (the machine's load drifts), float32
tensors of each size. Rank 0 prints a table: the median time of each and the median of the
rounds' inapack/gloo ratios with their range.

    torchrun ... -m inapack.torchbench [--mib 1 16 64] [--rounds 5]

make bench-torch runs it with 4 torchrun agents on emulated hosts through the reference switch
(scripts/torch-demo.sh bench).
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist

import inapack.torch  # noqa: F401 - registers the backend


def timed(t, src, group):
    t.copy_(src)
    dist.barrier(group=group)
    t0 = time.perf_counter()
    dist.all_reduce(t, group=group)
    dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    # The slowest rank's time: an all-reduce is done when every rank has its result.
    dist.all_reduce(dt, op=dist.ReduceOp.MAX, group=group)
    return float(dt)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=float, nargs="+", default=[1, 16, 64])
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    dist.init_process_group("inapack")
    gloo = dist.new_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print("torch-bench: %d ranks, backend %s against gloo, float32, %d interleaved rounds; load average %.1f on "
              "%d CPUs" % (world, dist.get_backend(), a.rounds, os.getloadavg()[0], os.cpu_count()), flush=True)
        print("torch-bench: %8s %12s %12s %12s %20s %14s" % ("MiB", "inapack_ms", "gloo_ms", "ina/gloo",
                                                           "ina/gloo_min-max", "inapack_MB/s"), flush=True)
    for mib in a.mib:
        n = int(mib * (1 << 20)) // 4
        src = (torch.arange(n, dtype=torch.float32) % 1000) / 1024 * (rank + 1)
        t = torch.empty_like(src)
        timed(t, src, None)  # warm up both
        timed(t, src, gloo)
        ina, gl = [], []
        for _ in range(a.rounds):
            ina.append(timed(t, src, None))
            gl.append(timed(t, src, gloo))
        ratios = [i / g for i, g in zip(ina, gl)]
        if rank == 0:
            im = statistics.median(ina)
            print("torch-bench: %8g %12.1f %12.1f %12.2f %20s %14.1f" % (
                mib, im * 1e3, statistics.median(gl) * 1e3, statistics.median(ratios),
                "%.2f-%.2f" % (min(ratios), max(ratios)), n * 4 / im / 1e6), flush=True)
    # ina-demo's form: the run passed.
    print("worker-summary: job=%s rank=%d status=ok iterations=%d exact=%d" % (
        os.environ.get("INAPACK_JOB", "-"), rank, len(a.mib), len(a.mib)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
