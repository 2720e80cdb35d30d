"""The numpy statement of the fixed-point rule: its scale keeps every sum inside int32 and its
results inside the stated bound, for adversarial magnitudes."""

import numpy as np

from inapack import fixedpoint


def test_worst_case_sums_fit_int32():
    for n in (1, 2, 3, 4, 8, 32):
        for e in range(fixedpoint.MIN_EXP, fixedpoint.MIN_EXP + fixedpoint.CLASSES):
            # Every worker holds the largest value below 2^e.
            x = np.nextafter(np.float32(2.0 ** e), np.float32(0))
            s = fixedpoint.scale(e, n)
            q = np.floor(float(x) * s + 0.5)
            assert n * q < 2**31 - 1, (n, e)


def test_bound_holds_on_random_magnitudes():
    rng = np.random.default_rng(11)
    for n in (2, 4, 7):
        xs = [(rng.standard_normal(4096) * 10.0 ** rng.uniform(-12, 4, 4096)).astype(np.float32) for _ in range(n)]
        got = fixedpoint.allreduce(xs, bucket=256, integrity=False)
        exact = np.sum([x.astype(np.float64) for x in xs], axis=0)
        bound = fixedpoint.error_bound(xs, bucket=256, integrity=False)
        assert np.all(np.abs(got - exact) <= bound)
        # The bound is tight enough to mean something: 2^-26 of the bucket's magnitude for 4 workers.
        assert np.all(bound <= 2.0 ** -22 * np.repeat(
            [np.abs(np.stack(xs)[:, b:b + 256]).max() for b in range(0, 4096, 256)], 256) * (n * n) + 1e-300)


def test_exponents():
    z = np.zeros(128, np.float32)
    one = z.copy()
    one[5] = -1.0
    assert fixedpoint.bucket_exponents([z, one], bucket=64, integrity=False) == [1, None]
    assert fixedpoint.bucket_exponents([z, one], bucket=63) == [1, None, None]  # packets of 63 values
    tiny = z.copy()
    tiny[0] = 1e-30
    assert fixedpoint.bucket_exponents([tiny], bucket=128) == [fixedpoint.MIN_EXP]
    assert fixedpoint.scale(None, 4) == fixedpoint.DEFAULT_SCALE
