"""The bridge end to end: Python -> ctypes -> the Go worker -> an in-process PS, four ranks in four
threads (the GIL is released during calls, or the ranks would wait for each other forever)."""

import numpy as np
import pytest

import inapack
from conftest import threads
from inapack import fixedpoint

N = 4
B = 2 * fixedpoint.chunk_values()  # a bucket of two packets


def magnitudes(rank, n=6 * B):
    """Buckets of B values of very different magnitudes (one all zero)."""
    rng = np.random.default_rng(rank)
    mags = np.repeat([1e-7, 3e-3, 1.0, 250.0, 9e4, 0.0], B)[:n]
    return (mags * rng.uniform(-1, 1, n)).astype(np.float32)


def test_float32_is_the_fixed_point_rule_and_within_the_bound(ranks):
    xs = [magnitudes(r) for r in range(N)]
    for bucket in (B, 0):  # 0: the default, 64 packets: the whole tensor is one bucket
        out = ranks(N, lambda w: w.allreduce(xs[w.rank].copy()), window=8, scale_bucket=bucket)
        want = fixedpoint.allreduce(xs, bucket=bucket)  # the same rule, in numpy
        exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
        for r in range(N):
            np.testing.assert_array_equal(out[r], want)
        assert np.all(np.abs(out[0] - exact) <= fixedpoint.error_bound(xs, bucket=bucket))


def test_per_bucket_scale_keeps_small_buckets(ranks):
    xs = [magnitudes(r) for r in range(N)]
    small = np.sum([x[:B].astype(np.float64) for x in xs], axis=0)
    # One bucket of 6 B values: the 1e-7 values share a scale with 9e4 and are lost entirely...
    one = ranks(N, lambda w: w.allreduce(xs[w.rank].copy()))
    assert np.abs(one[0][:B] - small).max() > 1e-8
    # ... with buckets of B they keep 2^-21 of their own magnitude (2^-26 from the scale, the
    # rest the float32 rounding of the result).
    per = ranks(N, lambda w: w.allreduce(xs[w.rank].copy()), scale_bucket=B)
    assert np.abs(per[0][:B] - small).max() <= 1e-7 * 2.0 ** -21


def test_int32_exact_and_in_place(ranks):
    rng = np.random.default_rng(3)
    xs = [rng.integers(-10**6, 10**6, 1000, dtype=np.int32) for _ in range(N)]

    def f(w):
        a = xs[w.rank].copy()
        b = w.allreduce(a)
        assert b is a
        return a

    out = ranks(N, f)
    want = np.sum([x.astype(np.int64) for x in xs], axis=0)
    for o in out:
        np.testing.assert_array_equal(o, want)


def test_int32_overflow_is_an_exception_with_the_go_text(ranks):
    def f(w):
        a = np.array([2**31 - 10, 7, -5], dtype=np.int32)
        with pytest.raises(inapack.SumOverflowError, match="does not fit in int32") as e:
            w.allreduce(a)
        assert isinstance(e.value, OverflowError)
        return a

    out = ranks(2, f)
    assert out[0][0] == 2**31 - 1  # saturated, the rest of the chunk's values are not trusted


def test_allreduce_many_mixed_list(ranks):
    xs = [magnitudes(r) for r in range(N)]
    ys = [magnitudes(r + N)[:300] * np.float32(1e-4) for r in range(N)]

    def f(w):
        r = w.rank
        return w.allreduce_many([xs[r].copy(), np.arange(70, dtype=np.int32) * (r + 1), ys[r].copy(),
                                 np.zeros(0, np.float32), (np.float32(1), np.float32(2))])

    out = ranks(N, f, scale_bucket=B)
    for many in out:
        # Each float32 array has its own buckets: the same as all-reducing it alone.
        np.testing.assert_array_equal(many[0], fixedpoint.allreduce(xs, bucket=B))
        np.testing.assert_array_equal(many[1], np.arange(70) * 10)
        np.testing.assert_array_equal(many[2], fixedpoint.allreduce(ys, bucket=B))
        assert many[3].size == 0 and many[3].dtype == np.float32
        np.testing.assert_array_equal(many[4], [4.0, 8.0])


def test_average_and_fixed_scale(ranks):
    def f(w):
        x = np.full(5, 0.25 * (w.rank + 1), np.float32)
        return w.allreduce(x, average=True, scale=1024), \
            w.allreduce_many([x.copy(), np.full(3, w.rank, np.float32)], average=True, scale=4)

    for avg, many in ranks(N, f):
        np.testing.assert_array_equal(avg, np.full(5, 0.625, np.float32))
        # scale 4: 0.625 is sent as round(2.5) = 3 (half away from zero): 4 * 3 / 4 / 4 workers.
        np.testing.assert_array_equal(many[0], np.full(5, 0.75, np.float32))
        np.testing.assert_array_equal(many[1], np.full(3, 1.5, np.float32))


def test_non_contiguous_input_is_copied(ranks):
    def f(w):
        base = np.arange(20, dtype=np.float32)
        view = base[::2]
        out = w.allreduce(view)
        return base, out

    for base, out in ranks(2, f):
        np.testing.assert_array_equal(base, np.arange(20, dtype=np.float32))  # untouched
        np.testing.assert_array_equal(out, 2 * np.arange(0, 20, 2, dtype=np.float32))


def test_no_progress_then_closed():
    with inapack.LocalFabric(2) as fab:
        w = fab.worker(0, progress_timeout=0.3)  # rank 1 never calls
        with pytest.raises(inapack.NoProgressError, match="made no progress") as e:
            w.allreduce(np.zeros(10, np.float32), scale=1)
        assert isinstance(e.value, TimeoutError)
        with pytest.raises(inapack.WorkerClosedError):
            w.allreduce(np.zeros(10, np.float32), scale=1)
        w.close()
        w.close()  # twice is fine
        with pytest.raises(inapack.WorkerClosedError):
            w.stats()


def test_config_and_argument_errors(monkeypatch):
    for v in inapack.ENV.values():
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(inapack.ConfigError, match="RANK"):
        inapack.Worker()
    with pytest.raises(inapack.ConfigError, match="INAPACK_IFACE"):
        inapack.Worker(0, 2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(inapack.ConfigError, match="WORLD_SIZE"):
        inapack.Worker(0)
    monkeypatch.delenv("WORLD_SIZE")
    # No such interface: the Go error's text.
    with pytest.raises(inapack.InaError, match='interface "ina-nonexistent0"'):
        inapack.Worker(0, 2, iface="ina-nonexistent0", ip="10.0.1.1")
    with pytest.raises(inapack.ConfigError, match="rank 5 outside"):
        inapack.Worker(5, 2, iface="lo", ip="10.0.1.1")
    with pytest.raises(inapack.ConfigError, match="ps_ip"):
        inapack.Worker(0, 2, iface="lo", ip="10.0.1.1", ps_ip="nowhere")
    # The member index (INAPACK_MEMBER) reaches the Go worker, which takes 0..15 only.
    with pytest.raises(inapack.ConfigError, match="member 16"):
        inapack.Worker(0, 2, member=16, iface="lo", ip="10.0.1.1")
    monkeypatch.setenv("INAPACK_MEMBER", "16")
    with pytest.raises(inapack.ConfigError, match="member 16"):
        inapack.Worker(0, 2, iface="lo", ip="10.0.1.1")
    monkeypatch.setenv("INAPACK_MEMBER", "one")
    with pytest.raises(inapack.ConfigError, match="INAPACK_MEMBER"):
        inapack.Worker(0, 2, iface="lo", ip="10.0.1.1")
    monkeypatch.delenv("INAPACK_MEMBER")
    with inapack.LocalFabric(2, job=3) as fab:
        with pytest.raises(inapack.ConfigError, match="local fabric for job 3"):
            inapack.Worker(0, 2, job=4, fabric=fab)
        w = fab.worker(0)
        with pytest.raises(inapack.ConfigError, match="already attached"):
            fab.worker(0)
        with pytest.raises(TypeError, match="float32 or int32"):
            w.allreduce(np.zeros(4))
        with pytest.raises(inapack.ConfigError, match="float32 arrays only"):
            w.allreduce(np.zeros(4, np.int32), average=True)
        with pytest.raises(inapack.ConfigError, match="scale"):
            w.allreduce(np.zeros(4, np.float32), scale=-1)
        w.close()
    with pytest.raises(inapack.ConfigError, match="init"):
        inapack.allreduce(np.zeros(1, np.float32))
    with inapack.LocalFabric(2) as fab:  # the fabric's PS checks integrity: so must its workers
        with pytest.raises(inapack.ConfigError, match="integrity true"):
            fab.worker(0, integrity=False)


def test_integrity_off_is_exact_too(ranks):
    # Without the integrity lane a packet carries 64 values and buckets are whole packets of 64.
    xs = [magnitudes(r) for r in range(2)]
    out = ranks(2, lambda w: w.allreduce(xs[w.rank].copy()), integrity=False, scale_bucket=128)
    for o in out:
        np.testing.assert_array_equal(o, fixedpoint.allreduce(xs, bucket=128, integrity=False))


def test_environment_configures_the_worker(monkeypatch, ranks):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("INAPACK_JOB", "7")
    monkeypatch.setenv("INAPACK_SCALE_BUCKET", "64")
    with inapack.LocalFabric(2, job=7) as fab:
        w = inapack.init(fabric=fab)
        assert (w.rank, w.world_size, w.job, w.scale_bucket) == (1, 2, 7, 64)
        peer = inapack.Worker(0, fabric=fab)
        import threading
        t = threading.Thread(target=peer.allreduce, args=(np.ones(3, np.int32),))
        t.start()
        np.testing.assert_array_equal(inapack.allreduce(np.full(3, 2, np.int32)), [3, 3, 3])
        t.join()
        assert w.stats()["Results"] == 1
        w.close()
        peer.close()
    monkeypatch.setenv("INAPACK_INTEGRITY", "maybe")
    with pytest.raises(inapack.ConfigError, match="INAPACK_INTEGRITY"):
        inapack.Worker(0, 2, iface="lo", ip="10.0.1.1")


def test_netns_opens_the_socket_in_that_namespace():
    """INAPACK_NETNS: the socket is opened in the named namespace (a veth pair only it has),
    while the process stays in its own."""
    import os
    import subprocess
    import uuid
    if os.geteuid() != 0:
        pytest.skip("SKIP: needs root (ip netns add, setns)")
    ns = "inapy" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "inadummy0", "type", "veth", "peer", "name", "inadummy1"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", "inadummy0", "up"], check=True)
        before = os.readlink("/proc/self/ns/net")
        with pytest.raises(inapack.InaError, match='interface "inadummy0"'):
            inapack.Worker(0, 2, iface="inadummy0", ip="10.0.1.1")  # not in this namespace
        w = inapack.Worker(0, 2, iface="inadummy0", netns=ns, ip="10.0.1.1", progress_timeout=0.3)
        assert os.readlink("/proc/self/ns/net") == before
        with pytest.raises(inapack.NoProgressError):  # nobody on the other end
            w.allreduce(np.ones(4, np.float32), scale=1)
        w.close()
        with pytest.raises(inapack.ConfigError, match="netns"):
            inapack.Worker(0, 2, iface="inadummy0", netns="ina-no-such-ns", ip="10.0.1.1")
    finally:
        subprocess.run(["ip", "netns", "del", ns])


def test_threads_mixed_across_ranks_are_exact():
    """Ranks on 1, 2, 4 and 2 threads (the Go worker.Group, each thread a share of the window and
    its own endpoint of the fabric) all-reduce together: int32 exact, float32 the fixed-point rule
    with per-bucket scales (a scale exchange on the threads first). threads reaches the Go worker:
    it refuses one that is no power of two dividing the window."""
    nthreads = [1, 2, 4, 2]
    rng = np.random.default_rng(9)
    ints = [rng.integers(-10**6, 10**6, 5000, dtype=np.int32) for _ in range(N)]
    xs = [magnitudes(r) for r in range(N)]
    with inapack.LocalFabric(N, window=16) as fab:
        workers = [fab.worker(r, threads=nthreads[r], scale_bucket=B) for r in range(N)]
        try:
            out = threads(N, lambda r: (workers[r].allreduce(ints[r].copy()), workers[r].allreduce(xs[r].copy())))
        finally:
            for w in workers:
                w.close()
    want_i = np.sum([x.astype(np.int64) for x in ints], axis=0)
    want_f = fixedpoint.allreduce(xs, bucket=B)
    for o in out:
        np.testing.assert_array_equal(o[0], want_i)
        np.testing.assert_array_equal(o[1], want_f)
    with inapack.LocalFabric(2, window=16) as fab:
        for bad in (3, 32):
            with pytest.raises(inapack.ConfigError, match="threads %d" % bad):
                fab.worker(0, threads=bad)
