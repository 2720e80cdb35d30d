"""Data-parallel training of an MLP (64-64-10, tanh, softmax) on scikit-learn's digits with plain
SGD, gradients averaged over WORLD_SIZE workers either through the switch (--mode switch: this
process is one worker, configured by RANK, WORLD_SIZE and INAPACK_* as ina-demo -exec sets them) or
by an exact local all-reduce of every worker's gradient in one process (--mode local: the float64
sum rounded once to float32). Both start from the same seed, split the data the same way and see
the same mini-batches, so they differ only in how gradients are summed.

Every step of a switch run also computes every peer's gradient (the parameters are identical on all
workers) and checks the switch's sum value by value: it must equal the fixed-point rule
(inapack.fixedpoint.allreduce) exactly and lie within inapack.fixedpoint.error_bound of the exact
sum. Prints "worker: ..." progress lines and a final "worker-summary: ... status=ok" line (the form
ina-demo reads), and writes the curves and the final parameters' hash as JSON.
"""

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

from .. import fixedpoint


def load(seed):
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("train: needs scikit-learn (pip install './python[demo]', or scripts/pyenv.sh)")
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


class MLP:
    """Parameters live in one flat float32 vector, the unit that is all-reduced."""

    def __init__(self, seed, sizes=(64, 64, 10)):
        rng = np.random.default_rng(seed)
        self.shapes = [(sizes[0], sizes[1]), (sizes[1],), (sizes[1], sizes[2]), (sizes[2],)]
        parts = [rng.normal(0, 1 / np.sqrt(s[0]), s).astype(np.float32) if len(s) == 2 else np.zeros(s, np.float32)
                 for s in self.shapes]
        self.flat = np.concatenate([p.ravel() for p in parts])

    def unpack(self, v):
        out, i = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            out.append(v[i:i + n].reshape(s))
            i += n
        return out

    def forward(self, x):
        w1, b1, w2, b2 = self.unpack(self.flat)
        h = np.tanh(x @ w1 + b1)
        z = h @ w2 + b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return h, p / p.sum(axis=1, keepdims=True)

    def loss_acc(self, x, y):
        _, p = self.forward(x)
        loss = -np.log(np.maximum(p[np.arange(len(y)), y], 1e-12)).mean()
        return float(loss), float((p.argmax(axis=1) == y).mean())

    def grad(self, x, y):
        """Gradient of the mean cross-entropy over (x, y), flat float32."""
        w1, _, w2, _ = self.unpack(self.flat)
        h, p = self.forward(x)
        d = p.copy()
        d[np.arange(len(y)), y] -= 1
        d /= np.float32(len(y))
        gw2, gb2 = h.T @ d, d.sum(axis=0)
        dh = (d @ w2.T) * (1 - h * h)
        gw1, gb1 = x.T @ dh, dh.sum(axis=0)
        return np.concatenate([g.ravel() for g in (gw1, gb1, gw2, gb2)]).astype(np.float32)


def batches(n, world, per_worker, epochs, seed):
    """Every step's mini-batch of each rank: a seeded permutation per epoch, cut into global
    batches of world*per_worker, rank r taking the r-th slice."""
    rng = np.random.default_rng(seed + 1)
    glob = world * per_worker
    for epoch in range(epochs):
        perm = rng.permutation(n)
        for s in range(n // glob):
            b = perm[s * glob:(s + 1) * glob]
            yield epoch, [b[r * per_worker:(r + 1) * per_worker] for r in range(world)]


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("local", "switch"), required=True)
    ap.add_argument("--out", required=True, help="JSON file (local) or directory (switch: rank<R>.json)")
    ap.add_argument("--world-size", type=int, help="local mode: simulated workers (switch mode: WORLD_SIZE)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=32, help="examples per worker per step")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale-bucket", type=int, default=0, help="values per fixed-point scaling bucket (0: 4096)")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    worker = None
    if a.mode == "switch":
        import inapack
        worker = inapack.init(scale_bucket=a.scale_bucket)
    res = train(a, worker)
    if worker is not None:
        worker.close()
        return 0 if res["status"] == "ok" else 1
    print("train: local all-reduce, %d workers, %d steps: final test accuracy %.4f, train loss %.5f (%s)"
          % (res["world_size"], res["steps"], res["final_test_acc"], res["final_train_loss"], a.out))
    return 0


def train(a, worker=None):
    """Trains with options a (parser()); through worker if given, else with the local all-reduce.
    Writes and returns the result record."""
    if worker is not None:
        world, rank, job = worker.world_size, worker.rank, worker.job
    else:
        world, rank, job = a.world_size or int(os.environ.get("WORLD_SIZE", 4)), 0, 0
    xtr, xte, ytr, yte = load(a.seed)
    model = MLP(a.seed)
    curve = []
    step = exact_steps = violations = 0
    worst = 0.0  # largest |switch - exact| / bound over all values and steps
    reduce_s = 0.0
    t0 = time.time()

    def evaluate(epoch):
        loss, _ = model.loss_acc(xtr, ytr)
        _, acc = model.loss_acc(xte, yte)
        curve.append({"step": step, "epoch": epoch, "train_loss": loss, "test_acc": acc,
                      "params_sha256": hashlib.sha256(model.flat.tobytes()).hexdigest()})
        return loss, acc

    evaluate(0)
    for epoch, idx in batches(len(ytr), world, a.batch, a.epochs, a.seed):
        grads = [model.grad(xtr[i], ytr[i]) for i in idx]  # every rank's gradient
        exact = np.sum([g.astype(np.float64) for g in grads], axis=0)
        if worker is None:
            total = exact.astype(np.float32)
        else:
            total = grads[rank].copy()
            t = time.perf_counter()
            worker.allreduce(total)
            dt = time.perf_counter() - t
            reduce_s += dt
            want = fixedpoint.allreduce(grads, bucket=a.scale_bucket, integrity=worker.integrity)
            bound = fixedpoint.error_bound(grads, bucket=a.scale_bucket, integrity=worker.integrity)
            err = np.abs(total.astype(np.float64) - exact)
            exact_steps += bool(np.array_equal(total, want))
            violations += int((err > bound).sum())
            worst = max(worst, float((err / bound).max()))
        model.flat -= np.float32(a.lr) * (total / np.float32(world))
        step += 1
        line = "worker: job=%d rank=%d step=%d epoch=%d" % (job, rank, step, epoch + 1)
        if worker is not None:
            line += " allreduce_ms=%.2f" % (dt * 1e3)
        if step % (len(ytr) // (world * a.batch)) == 0:
            loss, acc = evaluate(epoch + 1)
            line += " train_loss=%.5f test_acc=%.4f" % (loss, acc)
        if worker is not None:
            print(line, flush=True)
    ok = worker is None or exact_steps == step and violations == 0
    bucket = a.scale_bucket or fixedpoint.default_bucket(worker is None or worker.integrity)
    res = {
        "mode": a.mode, "status": "ok" if ok else "wrong", "rank": rank, "world_size": world, "job": job,
        "seed": a.seed, "epochs": a.epochs, "steps": step, "batch_per_worker": a.batch, "lr": a.lr,
        "params": int(model.flat.size), "scale_bucket": bucket, "curve": curve,
        "final_test_acc": curve[-1]["test_acc"], "final_train_loss": curve[-1]["train_loss"],
        "n_test": int(len(yte)), "params_sha256": hashlib.sha256(model.flat.tobytes()).hexdigest(),
        "exact_steps": exact_steps, "bound_violations": violations, "max_err_over_bound": worst,
        "allreduce_s": reduce_s, "wall_s": time.time() - t0,
        "stats": worker.stats() if worker is not None else None,
    }
    path = a.out
    if worker is not None:
        os.makedirs(a.out, exist_ok=True)
        path = os.path.join(a.out, "rank%d.json" % rank)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    if worker is not None:
        st = res["stats"]
        print("worker-summary: job=%d rank=%d status=%s iterations=%d exact=%d wrong=%d bound_violations=%d "
              "max_err_over_bound=%.3g final_test_acc=%.4f allreduce_ms=%.2f resent=%d sent=%d"
              % (job, rank, res["status"], step, exact_steps, step - exact_steps, violations, worst,
                 res["final_test_acc"], 1e3 * reduce_s / max(step, 1), st["Resent"], st["DataSent"]), flush=True)
    return res


if __name__ == "__main__":
    sys.exit(main())
