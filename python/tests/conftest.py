import threading

import pytest

import inapack


def run_ranks(n, fn, window=16, integrity=True, **worker_kw):
    """Runs fn(worker) for ranks 0..n-1 of one job, one thread each, on a LocalFabric; returns the
    results by rank and re-raises the first exception."""
    out, errs = [None] * n, [None] * n
    with inapack.LocalFabric(n, window=window, integrity=integrity) as fab:
        workers = [fab.worker(r, **worker_kw) for r in range(n)]

        def go(r):
            try:
                out[r] = fn(workers[r])
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errs[r] = e

        ts = [threading.Thread(target=go, args=(r,)) for r in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for w in workers:
            w.close()
    for e in errs:
        if e is not None:
            raise e
    return out


@pytest.fixture
def ranks():
    return run_ranks
