"""The DDP communication hook through DistributedDataParallel's own reducer: two DDP replicas in two
threads (each a one-process gloo group, so DDP hands every bucket to the hook), summed through a
two-rank in-process PS. The replicas must stay bitwise identical and track an exact reference.

Runs where torch imports (see python/README.md); skipped with one line elsewhere."""

import threading

import numpy as np
import pytest

try:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
except Exception as e:  # ImportError, or a broken install (missing CUDA libraries)
    pytest.skip("SKIP: torch is not importable here (%s: %s); see python/README.md"
                % (type(e).__name__, str(e).splitlines()[0][:80]), allow_module_level=True)

import inapack  # noqa: E402
import inapack.ddp  # noqa: E402


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.Tanh(), torch.nn.Linear(32, 5))


def test_hook_averages_buckets_like_an_exact_allreduce(tmp_path):
    dist.init_process_group("gloo", init_method="file://%s" % (tmp_path / "store"), rank=0, world_size=1)
    try:
        gen = torch.Generator().manual_seed(3)
        x, y = torch.randn(8, 64, 20, generator=gen), torch.randint(0, 5, (8, 64), generator=gen)
        steps, lr, n = 8, 0.2, 2
        with inapack.LocalFabric(n) as fab:
            workers = [fab.worker(r) for r in range(n)]
            # bucket_cap_mb small: several buckets per step, so ordering across buckets matters too.
            replicas = [DistributedDataParallel(model(1), bucket_cap_mb=0.001) for _ in range(n)]
            for r, m in enumerate(replicas):
                m.register_comm_hook(inapack.ddp.HookState(workers[r]), inapack.ddp.allreduce_hook)
            errs = []

            def train(r):
                try:
                    opt = torch.optim.SGD(replicas[r].parameters(), lr=lr)
                    for s in range(steps):
                        half = slice(r * 32, (r + 1) * 32)
                        opt.zero_grad()
                        torch.nn.functional.cross_entropy(replicas[r](x[s, half]), y[s, half]).backward()
                        opt.step()
                except Exception as e:  # noqa: BLE001
                    errs.append(e)

            ts = [threading.Thread(target=train, args=(r,)) for r in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            assert not errs, errs
            stats = [w.stats() for w in workers]
            for w in workers:
                w.close()
        # Reference: one model, the gradient averaged exactly over the two halves.
        ref = model(1)
        opt = torch.optim.SGD(ref.parameters(), lr=lr)
        for s in range(steps):
            opt.zero_grad()
            sum(torch.nn.functional.cross_entropy(ref(x[s, r * 32:(r + 1) * 32]), y[s, r * 32:(r + 1) * 32]) / n
                for r in range(n)).backward()
            opt.step()
        a, b = ([p.detach().numpy() for p in m.module.parameters()] for m in replicas)
        for pa, pb, pr in zip(a, b, ref.parameters()):
            np.testing.assert_array_equal(pa, pb)
            np.testing.assert_allclose(pa, pr.detach().numpy(), rtol=0, atol=1e-5)
        assert stats[0]["Results"] >= steps * 2  # several buckets per step went through the PS
    finally:
        dist.destroy_process_group()
