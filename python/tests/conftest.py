import threading

import pytest

import inapack


def threads(n, fn):
    """Runs fn(r) for r in 0..n-1, one thread each; returns the results by r and re-raises the
    first exception."""
    out, errs = [None] * n, [None] * n

    def go(r):
        try:
            out[r] = fn(r)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errs[r] = e

    ts = [threading.Thread(target=go, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errs:
        if e is not None:
            raise e
    return out


def run_ranks(n, fn, window=16, integrity=True, **worker_kw):
    """Runs fn(worker) for ranks 0..n-1 of one job, one thread each, on a LocalFabric; returns the
    results by rank and re-raises the first exception."""
    with inapack.LocalFabric(n, window=window, integrity=integrity) as fab:
        workers = [fab.worker(r, **worker_kw) for r in range(n)]
        try:
            return threads(n, lambda r: fn(workers[r]))
        finally:
            for w in workers:
                w.close()


@pytest.fixture
def ranks():
    return run_ranks
