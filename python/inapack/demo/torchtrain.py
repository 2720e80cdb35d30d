"""Data-parallel training of a small CNN on scikit-learn's digits with PyTorch's
DistributedDataParallel, one process per rank as torchrun starts them, over the torch.distributed
backend given (--backend inapack: through the switch; gloo: the reference). Every rank sees the
same seeded mini-batches as in inapack.demo.train, so two runs differ only in how gradients are
summed.

With --check (make torch-demo's runs) a DDP communication hook also gathers every rank's bucket
through gloo before all-reducing it with the backend, and checks the sum value by value: through
the switch it must equal inapack.fixedpoint.allreduce bit for bit and lie within
inapack.fixedpoint.error_bound of the exact sum (gloo's float32 sum is only reported against it). Without it DDP runs as users run it (the backend
gets every bucket, pre-divided by the world size, as an all_reduce SUM).

Prints "worker: ..." lines and a last "worker-summary: ... status=ok" line (the form ina-demo
reads) and writes DIR/rank<R>.json. `--summary GLOO_DIR NAME=DIR...` compares runs with the gloo
run instead and exits 1 unless each matches it.
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import inapack.torch  # noqa: F401 - registers the backend
from .. import fixedpoint
from .train import batches, load


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 10))


def images(x):
    return torch.from_numpy(x).reshape(-1, 1, 8, 8)


class Checker:
    """The --check hook's state and tallies."""

    def __init__(self, world, switch, bucket):
        self.world, self.switch, self.bucket = world, switch, bucket
        self.calls = self.exact = self.violations = 0
        self.worst = 0.0
        self.step_ok = True

    def hook(self, _state, bucket):
        t = bucket.buffer()
        ins = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(ins, t)  # gloo, through the backend's fallback
        dist.all_reduce(t)  # the backend's SUM
        xs = [i.numpy() for i in ins]
        exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
        err = np.abs(t.numpy().astype(np.float64) - exact)
        bound = fixedpoint.error_bound(xs, bucket=self.bucket)
        self.calls += 1
        self.worst = max(self.worst, float((err / bound).max()))
        if self.switch:  # gloo sums in float32: its error is float32 rounding, not the switch's bound
            self.violations += int((err > bound).sum())
            self.step_ok = self.step_ok and bool((err <= bound).all()) and np.array_equal(
                t.numpy(), fixedpoint.allreduce(xs, bucket=self.bucket))
        fut = torch.futures.Future()
        fut.set_result(t.div_(self.world))
        return fut


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="inapack", help="torch.distributed backend (inapack, gloo)")
    ap.add_argument("--out", help="directory for rank<R>.json")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32, help="examples per worker per step")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="check every bucket's sum (see above)")
    ap.add_argument("--summary", nargs="+", metavar="DIR",
                    help="GLOO_DIR NAME=DIR...: compare finished runs with the gloo run; exit 1 on a mismatch")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    if a.summary:
        return summary(a.summary[0], a.summary[1:])
    torch.set_num_threads(1)  # four ranks share the machine; one summation order everywhere
    dist.init_process_group(a.backend)
    try:
        res = train(a)
    finally:
        dist.destroy_process_group()
    return 0 if res["status"] == "ok" else 1


def train(a):
    rank, world = dist.get_rank(), dist.get_world_size()
    switch = dist.get_backend() == inapack.torch.NAME
    xtr, xte, ytr, yte = load(a.seed)
    xtr, xte, ytr, yte = images(xtr), images(xte), torch.from_numpy(ytr), torch.from_numpy(yte)
    net = model(a.seed)
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    bucket = int(os.environ.get("INAPACK_SCALE_BUCKET") or 0)
    chk = Checker(world, switch, bucket) if a.check else None
    if chk is not None:
        ddp.register_comm_hook(None, chk.hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
    lossf = torch.nn.functional.cross_entropy
    curve, step, exact_steps = [], 0, 0
    t0 = time.time()

    def evaluate(epoch):
        with torch.no_grad():
            loss = float(lossf(net(xtr), ytr))
            acc = float((net(xte).argmax(1) == yte).float().mean())
        flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()
        curve.append({"step": step, "epoch": epoch, "train_loss": loss, "test_acc": acc,
                      "params_sha256": hashlib.sha256(flat.tobytes()).hexdigest()})
        return loss, acc

    evaluate(0)
    per_epoch = len(ytr) // (world * a.batch)
    for epoch, idx in batches(len(ytr), world, a.batch, a.epochs, a.seed):
        i = torch.from_numpy(idx[rank])
        opt.zero_grad()
        if chk is not None:
            chk.step_ok = True
        lossf(ddp(xtr[i]), ytr[i]).backward()  # DDP all-reduces the gradient buckets here
        opt.step()
        step += 1
        exact_steps += chk is None or chk.step_ok
        line = "worker: job=%s rank=%d step=%d epoch=%d" % (os.environ.get("INAPACK_JOB", "-"), rank, step, epoch + 1)
        if step % per_epoch == 0:
            loss, acc = evaluate(epoch + 1)
            line += " train_loss=%.6f test_acc=%.4f" % (loss, acc)
            print(line, flush=True)
    wall = time.time() - t0
    ok = exact_steps == step and (chk is None or chk.violations == 0)
    stats = None
    if switch:
        pg = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
        stats = pg.worker.stats()
    res = {"backend": a.backend, "status": "ok" if ok else "wrong", "rank": rank, "world_size": world,
           "epochs": a.epochs, "steps": step, "curve": curve, "final_train_loss": curve[-1]["train_loss"],
           "final_test_acc": curve[-1]["test_acc"], "n_test": int(len(yte)), "params_sha256": curve[-1]["params_sha256"],
           "checked": chk is not None, "exact_steps": exact_steps, "max_err_over_bound": chk.worst if chk else None,
           "bound_violations": chk.violations if chk else None, "wall_s": wall, "stats": stats}
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "rank%d.json" % rank), "w") as f:
            json.dump(res, f, indent=1)
    # ina-demo's form; unchecked (checked=false), exact counts every step.
    print("worker-summary: job=%s rank=%d status=%s iterations=%d exact=%d wrong=%d checked=%s max_err_over_bound=%.3g "
          "final_train_loss=%.6f final_test_acc=%.4f resent=%d"
          % (os.environ.get("INAPACK_JOB", "-"), rank, res["status"], step, exact_steps, step - exact_steps,
             str(chk is not None).lower(),
             chk.worst if chk else 0, res["final_train_loss"], res["final_test_acc"],
             stats["Resent"] if stats else 0), flush=True)
    return res


def _ranks(d):
    out = []
    for name in sorted(os.listdir(d)):
        if name.startswith("rank") and name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                out.append(json.load(f))
    return out


# Loss within this of gloo's at every epoch: the fixed-point error (2^-26 of a bucket's largest
# gradient for 4 workers) moves this model's loss by about 1e-6 over a run.
LOSS_RTOL = 1e-4


def summary(gloo_dir, runs):
    ref = _ranks(gloo_dir)
    fails = []
    print("torch-demo: %-8s %6s %9s %12s %12s %11s %10s %8s" % ("run", "ranks", "steps", "train_loss", "max_rel_diff",
                                                                 "exact_steps", "err/bound", "resent"))
    rows = [("gloo", gloo_dir)] + [tuple(r.split("=", 1)) for r in runs]
    for name, d in rows:
        rs = _ranks(d)
        if not rs:
            fails.append("%s: no results in %s" % (name, d))
            continue
        r0 = rs[0]
        diff = max(abs(c["train_loss"] - g["train_loss"]) / g["train_loss"] for c, g in zip(r0["curve"], ref[0]["curve"]))
        same = len({r["params_sha256"] for r in rs}) == 1
        print("torch-demo: %-8s %6d %9d %12.6f %12.2e %11s %10.3g %8d" % (
            name, len(rs), r0["steps"], r0["final_train_loss"], diff,
            "%d/%d" % (r0["exact_steps"], r0["steps"]) if r0["checked"] else "unchecked", r0["max_err_over_bound"] or 0,
            sum((r["stats"] or {}).get("Resent", 0) for r in rs)))
        if len(rs) != len(ref) or not same:
            fails.append("%s: %d ranks, parameters identical on all: %s" % (name, len(rs), same))
        if any(r["status"] != "ok" for r in rs):
            fails.append("%s: a rank's check failed" % name)
        if r0["steps"] != ref[0]["steps"] or len(r0["curve"]) != len(ref[0]["curve"]):
            fails.append("%s: %d steps, gloo %d" % (name, r0["steps"], ref[0]["steps"]))
        elif diff > LOSS_RTOL:
            fails.append("%s: train loss differs from gloo's by %.2e (relative) > %g" % (name, diff, LOSS_RTOL))
        if abs(r0["final_test_acc"] - ref[0]["final_test_acc"]) > 1.0 / r0["n_test"] + 1e-9:
            fails.append("%s: test accuracy %.4f, gloo %.4f" % (name, r0["final_test_acc"], ref[0]["final_test_acc"]))
    # Through the switch the sums are the fixed-point rule whatever the path, faults or preemption
    # (and DDP's division by 4 before the sum only shifts the exponents): one result, bit for bit.
    ends = {name: _ranks(d)[0]["params_sha256"] for name, d in rows[1:] if _ranks(d)}
    if len(set(ends.values())) > 1:
        fails.append("the switch runs end with different parameters: %s" % ", ".join(
            "%s %s" % (n, h[:12]) for n, h in ends.items()))
    for f in fails:
        print("torch-demo: FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
