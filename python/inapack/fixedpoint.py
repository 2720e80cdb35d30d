"""The fixed-point rule of float32 all-reduce, in numpy: what the switch returns and how far it may be
from the exact sum. An independent statement of worker/scale.go, used by the tests and the training
demo to check every result.

Each bucket of B values (whole packets of chunk_values(); default 64 packets) is sent as q = round(x * s) (round half
away from zero), s = 2^(30 - E - ceil(log2 N)) for N workers, where 2^E bounds the bucket's largest
|x| over all workers (E = frexp exponent, clamped to [MIN_EXP, MIN_EXP + 63]; the workers agree on
E with one small extra all-reduce). Then no int32 lane can overflow, and each value of the result is
float32(sum(q) / s), within

    N/(2s) * (1 + 2^-24) + 2^-24 |S|    of the exact sum S;  N/(2s) <= N 2^ceil(log2 N) M 2^-30

for the bucket's largest magnitude M (2^-26 M for 4 workers).
"""

import numpy as np

K = 64  # values per packet; with integrity on (the default) the last one is the integrity lane
DEFAULT_CHUNKS = 64  # packets per bucket when the worker is given no bucket size
MIN_EXP = -46
CLASSES = 64
DEFAULT_SCALE = 2.0 ** 20


def chunk_values(integrity=True):
    """Tensor values one packet carries: K, less the integrity lane when it is on."""
    return K - 1 if integrity else K


def default_bucket(integrity=True):
    """The values per bucket when the worker is given no bucket size (0)."""
    return DEFAULT_CHUNKS * chunk_values(integrity)


def _bucket(bucket, integrity=True):
    n = chunk_values(integrity)
    bucket = bucket or default_bucket(integrity)
    return -(-bucket // n) * n


def _ceil_log2(n):
    return (n - 1).bit_length()


def bucket_exponents(arrays, bucket=0, integrity=True):
    """The agreed exponent E of each bucket over all workers' arrays (None: every value zero)."""
    bucket = _bucket(bucket, integrity)
    x = np.abs(np.stack([np.asarray(a, dtype=np.float32) for a in arrays]).astype(np.float64))
    out = []
    for b in range(0, x.shape[1], bucket):
        m = x[:, b:b + bucket].max()
        if not np.isfinite(m):
            out.append(MIN_EXP + CLASSES - 1)
        elif m == 0:
            out.append(None)
        else:
            out.append(min(max(int(np.frexp(m)[1]), MIN_EXP), MIN_EXP + CLASSES - 1))
    return out


def scale(exponent, workers):
    """The scale of a bucket with agreed exponent E (None: all zero) for the given workers."""
    if exponent is None:
        return DEFAULT_SCALE
    return 2.0 ** (30 - exponent - _ceil_log2(workers))


def _per_value(arrays, bucket, integrity, f):
    bucket = _bucket(bucket, integrity)
    n = len(arrays[0])
    exps = bucket_exponents(arrays, bucket, integrity)
    return np.repeat([f(e) for e in exps], bucket)[:n]


def allreduce(arrays, bucket=0, integrity=True):
    """What every worker gets back from the switch for these per-worker float32 arrays (when no
    value is NaN, Inf or of magnitude 2^(MIN_EXP+63) or more: those may take the exact FLOAT path)."""
    s = _per_value(arrays, bucket, integrity, lambda e: scale(e, len(arrays)))
    q = np.zeros(len(arrays[0]), dtype=np.int64)
    for a in arrays:
        v = np.asarray(a, dtype=np.float32).astype(np.float64) * s
        q += (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)
    return (q / s).astype(np.float32)


def error_bound(arrays, bucket=0, integrity=True):
    """Per value, the largest |result - exact sum| the switch may return (the stated bound)."""
    n = len(arrays)
    s = _per_value(arrays, bucket, integrity, lambda e: scale(e, n))
    exact = np.sum([np.asarray(a, dtype=np.float32).astype(np.float64) for a in arrays], axis=0)
    return n / (2 * s) * (1 + 2.0 ** -24) + np.abs(exact) * 2.0 ** -24
