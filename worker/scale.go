package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Per-bucket fixed-point scaling for float32 all-reduce (SwitchML's idea, for a switch that only
// sums): every worker must encode a bucket with the same scale, and the scale must keep the sum of
// all workers' values inside int32. The workers therefore first agree on each bucket's largest
// magnitude class with one small AllReduceInt32 (the exponent exchange, below), then all-reduce
// the data with a scale per bucket.
//
// Exponent exchange. Bucket b's class on one worker is e_b, the exponent of its largest |x|
// (|x| < 2^e_b), clamped to [MinScaleExp, MinScaleExp+63]. The worker contributes a one-hot counter
// for its class; the switch sums the counters over the workers, and the highest non-zero counter
// is the largest class of any worker, E_b. A counter never exceeds 32 (wire.MaxWorkers) so it fits
// in 6 bits; 5 counters share an int32 lane without carries, and a bucket's 64 counters take 13
// lanes. Cost: one extra all-reduce of 13 values per bucket per call (with the default bucket of
// 4096 values, 0.3% more packets) and the round trip of that call.
//
// Scale. With N workers, bucket b is sent as q = round(x * s_b), s_b = 2^(30 - E_b - ceil(log2 N)).
// Then |q| <= 2^(30-ceil(log2 N)) + 1/2 for every value of every worker, so every partial and full
// sum of N of them stays below 2^30 + N/2 < 2^31: no lane overflows and no chunk leaves the
// fixed-point path. Only a class clamped at the top (|x| >= 2^(MinScaleExp+63)) or NaN/Inf can
// overflow; such a chunk takes the exact FLOAT path as in AllReduceFloat32, never a wrong sum.
//
// Error bound, per value, exact sum S of the N workers' values:
//
//	|result - S| <= N/(2 s_b) (1 + 2^-24) + 2^-24 |S|,  N/(2 s_b) = N * 2^(E_b + ceil(log2 N) - 31)
//
// and since 2^(E_b - 1) <= M_b (the bucket's largest |x| over all workers, when not clamped at
// the bottom), the first term is at most N * 2^ceil(log2 N) * M_b * 2^-30: 2^-26 M_b for 4 workers.
// ScaledErrorBound computes it.

// defaultScaleChunks is the chunks per scaling bucket when the caller gives no bucket size.
const defaultScaleChunks = 64

// MinScaleExp is the smallest exponent class: buckets whose largest |x| is below 2^MinScaleExp use
// the scale of that class (their error bound only gets smaller). The largest class is
// MinScaleExp+63, i.e. |x| < 2^17 keeps a bucket on the fixed-point path.
const MinScaleExp = -46

const (
	scaleClasses   = 64
	counterBits    = 6 // holds 0..32 workers
	countersInLane = 32 / counterBits
	lanesPerBucket = (scaleClasses + countersInLane - 1) / countersInLane
)

// AllReduceFloat32Scaled replaces data with the element-wise sum over all workers, each bucket of
// bucket values (rounded up to whole chunks of ChunkValues; 0 means 64 chunks) aggregated in fixed
// point with a scale the workers agree on first (see scale.go). Every worker must pass the same
// length and bucket. It makes two all-reduce calls (the exponent exchange, then the data).
func (w *Worker) AllReduceFloat32Scaled(ctx context.Context, data []float32, bucket int) error {
	return w.AllReduceManyScaled(ctx, []Tensor{{Float32: data}}, bucket)
}

// AllReduceManyScaled is AllReduceMany with a scale per bucket of every float32 tensor (their
// Scale is ignored): each tensor is cut into buckets of bucket values (as in
// AllReduceFloat32Scaled; a bucket never spans two tensors) whose scales are agreed in one
// exponent exchange for the whole call. int32 tensors are summed exactly, as in AllReduceMany.
func (w *Worker) AllReduceManyScaled(ctx context.Context, ts []Tensor, bucket int) error {
	return allReduceManyScaled(ctx, w, &w.cfg, ts, bucket)
}

// reducer is a Worker or a Group.
type reducer interface {
	AllReduceInt32(ctx context.Context, data []int32) error
	AllReduceMany(ctx context.Context, ts []Tensor) error
}

// allReduceManyScaled is AllReduceManyScaled on w, a Worker or a Group of cfg.
func allReduceManyScaled(ctx context.Context, w reducer, cfg *Config, ts []Tensor, bucket int) error {
	if bucket < 0 {
		return fmt.Errorf("%w: scale bucket %d must not be negative", ErrConfig, bucket)
	}
	bucket = cfg.scaleBucket(bucket)
	var counters []int32
	for i, t := range ts {
		if t.Int32 != nil && t.Float32 != nil {
			return fmt.Errorf("%w: tensor %d has both Int32 and Float32 set", ErrConfig, i)
		}
		for b := 0; b < len(t.Float32); b += bucket {
			lanes := make([]int32, lanesPerBucket)
			if c, ok := bucketClass(t.Float32[b:min(len(t.Float32), b+bucket)]); ok {
				lanes[c/countersInLane] = 1 << (counterBits * (c % countersInLane))
			}
			counters = append(counters, lanes...)
		}
	}
	if len(counters) > 0 {
		if err := w.AllReduceInt32(ctx, counters); err != nil {
			return fmt.Errorf("worker: job %d rank %d: scale exchange: %w", cfg.Job, cfg.Rank, err)
		}
	}
	// The call AllReduceMany sees: int32 tensors as given, float32 ones cut at bucket boundaries,
	// each piece with its scale (pieces are whole chunks, so no chunk mixes two scales).
	var pieces []Tensor
	var from []int // pieces[i] is (a part of) ts[from[i]]
	for i, t := range ts {
		if t.Float32 == nil {
			pieces, from = append(pieces, t), append(from, i)
			continue
		}
		for b := 0; b < len(t.Float32); b += bucket {
			class := topClass(counters[:lanesPerBucket])
			counters = counters[lanesPerBucket:]
			pieces = append(pieces, Tensor{Float32: t.Float32[b:min(len(t.Float32), b+bucket)], Scale: BucketScale(class, cfg.Workers)})
			from = append(from, i)
		}
	}
	err := w.AllReduceMany(ctx, pieces)
	var oe *OverflowError
	if errors.As(err, &oe) {
		for i, p := range oe.Tensors {
			oe.Tensors[i] = from[p]
		}
	}
	return err
}

// scaleBucket rounds a bucket size up to whole chunks, so that no chunk mixes two scales.
func (c *Config) scaleBucket(bucket int) int {
	n := c.width()
	if bucket == 0 {
		return defaultScaleChunks * n
	}
	return (bucket + n - 1) / n * n
}

// bucketClass is the exponent class of the largest |x| in xs, false if every value is zero.
// NaN and Inf count as the top class.
func bucketClass(xs []float32) (int, bool) {
	var m float32
	for _, x := range xs {
		a := float32(math.Abs(float64(x)))
		if a != a || a > math.MaxFloat32 {
			return scaleClasses - 1, true
		}
		m = max(m, a)
	}
	if m == 0 {
		return 0, false
	}
	_, e := math.Frexp(float64(m)) // m < 2^e
	return min(max(e-MinScaleExp, 0), scaleClasses-1), true
}

// topClass is the highest class with a non-zero counter, -1 if none (every worker's bucket is zero).
func topClass(lanes []int32) int {
	for c := scaleClasses - 1; c >= 0; c-- {
		if lanes[c/countersInLane]>>(counterBits*(c%countersInLane))&(1<<counterBits-1) != 0 {
			return c
		}
	}
	return -1
}

// BucketScale is the scale of a bucket whose largest exponent class over the workers is class
// (-1: every value is zero), for the given number of workers: 2^(30 - E - ceil(log2 workers)) with
// E = MinScaleExp + class.
func BucketScale(class, workers int) float64 {
	if class < 0 {
		return DefaultScale
	}
	return math.Ldexp(1, 30-(MinScaleExp+class)-ceilLog2(workers))
}

// ScaledErrorBound is the largest |result - S| of AllReduceFloat32Scaled for a value whose exact
// sum over the workers is s, in a bucket whose largest |x| over all workers is m (on the
// fixed-point path, m < 2^(MinScaleExp+63)).
func ScaledErrorBound(m, s float64, workers int) float64 {
	c := -1
	if m > 0 {
		_, e := math.Frexp(m)
		c = min(max(e-MinScaleExp, 0), scaleClasses-1)
	}
	q := float64(workers) / (2 * BucketScale(c, workers))
	return q*(1+0x1p-24) + math.Ldexp(math.Abs(s), -24)
}

func ceilLog2(n int) int { return bits.Len(uint(n - 1)) }
