"""The torch.distributed backend "inapack" (inapack.torch) with real torch: four ranks in four
threads, each its own backend on one in-process PS (a LocalFabric) and one store, against gloo
groups of the same ranks. all_reduce must be the fixed-point rule bit for bit and within its bound
of gloo's sum; DDP training of a CNN must follow gloo's loss curve; errors must raise, not hang.
test_backend_from_the_environment runs the real entry point, init_process_group("inapack") in a
process of its own (root: it opens AF_PACKET in a network namespace of its own).

CI installs torch (scripts/pyenv.sh) and fails on this module's skip."""

import datetime
import os
import subprocess
import sys
import time

import numpy as np
import pytest

try:
    import torch
    import torch._C._distributed_c10d as C
    import torch.distributed as dist
except Exception as e:  # ImportError, or a broken install (missing CUDA libraries)
    pytest.skip("SKIP: torch is not importable here (%s: %s); scripts/pyenv.sh installs it"
                % (type(e).__name__, str(e).splitlines()[0][:80]), allow_module_level=True)

import inapack  # noqa: E402
import inapack.torch as itorch  # noqa: E402
from inapack import fixedpoint  # noqa: E402
from conftest import threads  # noqa: E402

N = 4
TIMEOUT = datetime.timedelta(seconds=60)


class Groups:
    """n ranks' inapack backends (on one LocalFabric) and gloo backends, made in n threads."""

    def __init__(self, n=N, **worker_kw):
        self.n = n
        self.fab = inapack.LocalFabric(n)
        store = dist.HashStore()
        self.ina = threads(n, lambda r: itorch.ProcessGroupINA(dist.PrefixStore("ina/", store), r, n, TIMEOUT,
                                                               worker=self.fab.worker(r, **worker_kw)))
        self.gloo = threads(n, lambda r: dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), r, n, TIMEOUT))

    def close(self):
        for g in self.ina:
            g.shutdown()
        self.fab.close()


@pytest.fixture
def groups():
    g = Groups()
    yield g
    g.close()


def allreduce(pg, t, op=dist.ReduceOp.SUM):
    o = dist.AllreduceOptions()
    o.reduceOp = op
    pg.allreduce([t], o).wait()
    return t


def test_allreduce_is_the_rule_and_within_the_bound_of_gloo(groups):
    rng = np.random.default_rng(5)
    for dtype in itorch.FLOATS:
        for n in (1, 62, 63, 1001, 4033, 9001):  # odd sizes: partial packets and partial buckets
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
                mags = 10.0 ** rng.uniform(-3, 2, n)
                xs = [torch.from_numpy((rng.standard_normal(n) * mags).astype(np.float32)).to(dtype) for _ in range(N)]
                ina = threads(N, lambda r: allreduce(groups.ina[r], xs[r].clone(), op))
                # gloo has no AVG: its SUM, divided the way torch divides.
                gloo = threads(N, lambda r: allreduce(groups.gloo[r], xs[r].clone()))
                avg = op == dist.ReduceOp.AVG
                f32 = [x.float().numpy() for x in xs]
                rule = torch.from_numpy(fixedpoint.allreduce(f32))
                if avg:
                    rule = rule / N
                want = rule.to(dtype)  # one rounding of the float32 result to the tensor's type
                exact = np.sum([x.astype(np.float64) for x in f32], axis=0) / (N if avg else 1)
                bound = fixedpoint.error_bound(f32) / (N if avg else 1)
                # The tensor type's rounding of a result (half an ulp), and gloo's (a rounding per
                # addition, of partial sums up to the sum of magnitudes).
                eps = float(torch.finfo(dtype).eps)
                ulp = np.abs(exact) * eps
                gloo_err = N * eps * np.sum([np.abs(x.astype(np.float64)) for x in f32], axis=0) / (N if avg else 1)
                for r in range(N):
                    assert ina[r].dtype == dtype
                    assert torch.equal(ina[r], want), (dtype, n, op)
                got = ina[0].double().numpy()
                g = gloo[0].double().numpy() / (N if avg else 1)
                assert np.all(np.abs(got - exact) <= bound + ulp / 2 + 1e-300), (dtype, n, op)
                assert np.all(np.abs(got - g) <= bound + ulp / 2 + gloo_err + 1e-300), (dtype, n, op)


def test_int32_is_exact_and_coalesced_calls_are_each_reduced(groups):
    xs = [torch.arange(777, dtype=torch.int32) * (r + 1) - 300 for r in range(N)]
    ys = [torch.full((70,), 0.5 * r, dtype=torch.bfloat16) for r in range(N)]
    zs = [torch.linspace(-1, 1, 130) * (r + 1) for r in range(N)]

    def f(r):
        a = allreduce(groups.ina[r], xs[r].clone())
        b, c = ys[r].clone(), zs[r].clone()
        groups.ina[r].allreduce_coalesced([b, c], dist.AllreduceCoalescedOptions()).wait()
        return a, b, c

    for a, b, c in threads(N, f):
        assert torch.equal(a, sum(xs))
        assert torch.equal(b, torch.full((70,), 3.0, dtype=torch.bfloat16))
        np.testing.assert_array_equal(c.numpy(), fixedpoint.allreduce([z.numpy() for z in zs]))


def test_in_place_on_views_and_strided_tensors(groups):
    base = [torch.arange(40, dtype=torch.float32).reshape(4, 10) * (r + 1) for r in range(N)]

    def f(r):
        b = base[r].clone()
        allreduce(groups.ina[r], b[:, 3])  # a strided column: staged and copied back
        allreduce(groups.ina[r], b[1])  # a contiguous row: in place
        return b

    want = torch.arange(40, dtype=torch.float32).reshape(4, 10)
    for r, b in enumerate(threads(N, f)):
        assert torch.equal(b[0, 3], want[0, 3] * 10) and torch.equal(b[2:, 3], want[2:, 3] * 10)
        # Row 1's column 3 was already the sum (the same on every rank): 4 times it.
        assert torch.equal(b[1], torch.where(torch.arange(10) == 3, want[1] * 40, want[1] * 10))
        assert torch.equal(b[0, :3], want[0, :3] * (r + 1)) and torch.equal(b[3, 4:], want[3, 4:] * (r + 1))  # untouched


def test_other_collectives_are_gloos(groups):
    xs = [torch.randn(33) for _ in range(N)]

    def f(r):
        pg = groups.ina[r]
        mx = allreduce(pg, xs[r].clone(), dist.ReduceOp.MAX)
        b = xs[r].clone()
        pg.broadcast([b], dist.BroadcastOptions()).wait()
        outs = [[torch.empty(33) for _ in range(N)]]
        pg.allgather(outs, [xs[r]], C.AllgatherOptions()).wait()
        rs = torch.empty(2)
        pg._reduce_scatter_base(rs, torch.arange(2 * N, dtype=torch.float32) * (r + 1),
                                dist.ReduceScatterOptions()).wait()
        pg.barrier(dist.BarrierOptions()).wait()
        return mx, b, outs[0], rs

    for r, (mx, b, outs, rs) in enumerate(threads(N, f)):
        assert torch.equal(mx, torch.stack(xs).max(0).values)
        assert torch.equal(b, xs[0])
        assert all(torch.equal(o, x) for o, x in zip(outs, xs))
        assert torch.equal(rs, torch.arange(2 * r, 2 * r + 2, dtype=torch.float32) * 10)


def test_unsupported_types_raise_at_the_call(groups):
    pg = groups.ina[0]
    for dtype in (torch.float64, torch.int64, torch.uint8, torch.bool):
        with pytest.raises(TypeError, match="the switch sums float32, float16, bfloat16 and int32"):
            pg.allreduce([torch.zeros(3, dtype=dtype)], dist.AllreduceOptions())
    o = dist.AllreduceOptions()
    o.reduceOp = dist.ReduceOp.AVG
    with pytest.raises(TypeError, match="AVG of an int32"):
        pg.allreduce([torch.zeros(3, dtype=torch.int32)], o)
    # Nothing was queued: the ranks still agree on the sequence and the next call works.
    threads(N, lambda r: allreduce(groups.ina[r], torch.ones(5)))


def test_no_progress_raises_then_the_group_is_closed():
    g = Groups(2, progress_timeout=0.5)
    try:
        t0 = time.monotonic()
        w = g.ina[0].allreduce([torch.ones(100)], dist.AllreduceOptions())  # rank 1 never calls
        with pytest.raises(inapack.NoProgressError, match="made no progress for 0.5s: the switch has no entry"):
            w.wait()
        assert time.monotonic() - t0 < 10
        with pytest.raises(inapack.WorkerClosedError):
            g.ina[0].allreduce([torch.ones(100)], dist.AllreduceOptions()).wait()
    finally:
        g.close()


def test_ddp_backward_raises_when_the_switch_makes_no_progress(tmp_path):
    """DDP's reducer reads the backend's future: a failed all-reduce must make backward() raise
    (not crash the process, not hang, not train on an unreduced gradient)."""
    dist.init_process_group("gloo", init_method="file://%s" % (tmp_path / "store"), rank=0, world_size=1)
    g = Groups(2, progress_timeout=0.5)
    try:
        pgs = [_group(b, dist.HashStore(), r, 2, dist.ProcessGroup.BackendType.CUSTOM) for r, b in enumerate(g.ina)]
        nets = [torch.nn.Linear(5, 3) for _ in range(2)]
        ddps = threads(2, lambda r: torch.nn.parallel.DistributedDataParallel(nets[r], process_group=pgs[r]))
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="made no progress for 0.5s"):  # rank 1 never steps
            ddps[0](torch.ones(2, 5)).sum().backward()
        assert time.monotonic() - t0 < 10
    finally:
        g.close()
        dist.destroy_process_group()


def test_ranks_must_agree_on_the_job():
    store = dist.HashStore()
    with inapack.LocalFabric(2, job=1) as fab, inapack.LocalFabric(2, job=2) as other:
        workers = [fab.worker(0), other.worker(1)]  # rank 1 set up for another job
        made = [None, None]

        def make(r):
            made[r] = itorch.ProcessGroupINA(store, r, 2, TIMEOUT, worker=workers[r])

        with pytest.raises(inapack.ConfigError, match="rank 1 is configured job=2 .* rank 0 job=1"):
            threads(2, make)
        made[0].shutdown()
        workers[1].close()


def test_the_first_group_is_the_job_and_a_later_one_gloo(monkeypatch):
    fabs = []

    def worker(rank, size):  # a one-rank job of its own each time
        fabs.append(inapack.LocalFabric(size))
        return fabs[-1].worker(rank)

    monkeypatch.setattr(itorch, "Worker", worker)
    try:
        store = dist.HashStore()
        job = itorch.create(dist.PrefixStore("a/", store), 0, 1, TIMEOUT)
        sub = itorch.create(dist.PrefixStore("b/", store), 0, 1, TIMEOUT)
        assert isinstance(job, itorch.ProcessGroupINA)
        assert isinstance(sub, dist.ProcessGroupGloo)
        job.shutdown()  # the job's group gone, the next one is the job again
        again = itorch.create(dist.PrefixStore("c/", store), 0, 1, TIMEOUT)
        assert isinstance(again, itorch.ProcessGroupINA)
        again.shutdown()
        assert len(fabs) == 2
    finally:
        for f in fabs:
            f.close()


def _group(backend, store, rank, size, btype):
    """A ProcessGroup around one rank's backend, as init_process_group makes (DDP takes groups)."""
    pg = dist.ProcessGroup(store, rank, size)
    pg._set_default_backend(btype)
    pg._register_backend(torch.device("cpu"), btype, backend)
    return pg


def _train(pgs, steps):
    """DDP of inapack.demo.torchtrain's CNN over these groups, one thread per rank, each rank its
    slice of seeded mini-batches of the digits; returns every rank's loss per step and parameters."""
    pytest.importorskip("sklearn", reason="SKIP: scikit-learn not installed (the digits; scripts/pyenv.sh)")
    from inapack.demo import torchtrain
    from inapack.demo.train import batches, load
    xtr, _, ytr, _ = load(1)
    xtr, ytr = torchtrain.images(xtr), torch.from_numpy(ytr)
    n = len(pgs)
    plan = [idx for _, idx in batches(len(ytr), n, 16, 10, 1)][:steps]

    nets = [torchtrain.model(1) for _ in range(n)]  # here: torch's seed is global, the threads would race for it

    def rank(r):
        net = nets[r]
        ddp = torch.nn.parallel.DistributedDataParallel(net, process_group=pgs[r], bucket_cap_mb=0.004)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
        losses = []
        for idx in plan:
            i = torch.from_numpy(idx[r])
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(ddp(xtr[i]), ytr[i])
            loss.backward()
            opt.step()
            with torch.no_grad():
                losses.append(float(torch.nn.functional.cross_entropy(net(xtr), ytr)))
        return losses, torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    return threads(n, rank)


def test_ddp_follows_gloos_loss_curve(tmp_path):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://%s" % (tmp_path / "store"), rank=0, world_size=1)
    try:
        g = Groups()
        try:
            store = dist.HashStore()
            ina = [_group(b, store, r, N, dist.ProcessGroup.BackendType.CUSTOM) for r, b in enumerate(g.ina)]
            gloo = [_group(b, store, r, N, dist.ProcessGroup.BackendType.GLOO) for r, b in enumerate(g.gloo)]
            steps = 40
            a = _train(ina, steps)
            stats = g.ina[0].worker.stats()
            b = _train(gloo, steps)
        finally:
            g.close()
    finally:
        dist.destroy_process_group()
    for losses, params in a[1:]:
        assert torch.equal(params, a[0][1])  # every rank's replica is the same, bit for bit
    # Several buckets a step (bucket_cap_mb small), all through the switch's path.
    assert stats["Results"] >= 2 * steps
    la, lb = np.array(a[0][0]), np.array(b[0][0])
    assert lb[-1] < 0.8 * lb[0]  # it trains
    np.testing.assert_allclose(la, lb, rtol=1e-4)


def test_backend_from_the_environment():
    """init_process_group("inapack") as torchrun runs it, configured by RANK, WORLD_SIZE and
    INAPACK_*: with no PS on the link, all_reduce raises NoProgressError (it never hangs) and the
    gloo side (barrier, broadcast) still works."""
    if os.geteuid() != 0:
        pytest.skip("SKIP: needs root (AF_PACKET in a network namespace of its own: unshare -n)")
    prog = r"""
import datetime, os, time, torch, torch.distributed as dist
import inapack, inapack.torch
dist.init_process_group("inapack", timeout=datetime.timedelta(seconds=30))  # env://, as under torchrun
assert dist.get_backend() == "inapack" and dist.get_world_size() == 1
b = torch.arange(4.0); dist.broadcast(b, 0); dist.barrier()
t = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
assert (t.worker.rank, t.worker.job, t.worker.world_size) == (0, 9, 1), vars(t.worker)
t0 = time.monotonic()
try:
    dist.all_reduce(torch.ones(10))
    print("no error")
except inapack.NoProgressError as e:
    print("raised after %.1fs: %s" % (time.monotonic() - t0, e))
dist.barrier()
dist.destroy_process_group()
"""
    # The namespace has a loopback of its own: any port is free there.
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", RANK="0", WORLD_SIZE="1", INAPACK_JOB="9",
               INAPACK_IFACE="lo", INAPACK_IP="127.0.0.1", INAPACK_PROGRESS_TIMEOUT="1")
    out = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" -c "$1"', sys.executable, prog],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "raised after" in out.stdout, out.stdout + out.stderr[-2000:]
    assert "job 9 rank 0: all_reduce of 10 values made no progress for 1s" in out.stdout
    secs = float(out.stdout.split("raised after ")[1].split("s")[0])
    assert secs < 10
