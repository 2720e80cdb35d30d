package worker_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// chunk is the values per packet of the tests' workers (integrity on, by default).
const chunk = wire.IntegrityWidth

// scaledTensor is rank's tensor: 6 buckets of two chunks, each bucket of its own magnitude (and
// the last one zero), so a single scale would lose the small buckets.
func scaledTensor(rank int) []float32 {
	mags := []float64{1e-7, 3e-3, 1, 250, 9e4, 0}
	r := rand.New(rand.NewPCG(7, uint64(rank)))
	out := make([]float32, 0, 2*chunk*len(mags))
	for _, m := range mags {
		for range 2 * chunk {
			out = append(out, float32(m*(2*r.Float64()-1)))
		}
	}
	out[3] = float32(math.Ldexp(1, -60)) // below the smallest class: clamped, still exact enough
	return out
}

func TestAllReduceFloat32ScaledBound(t *testing.T) {
	const n, bucket = 4, 2 * chunk
	inputs := make([][]float32, n)
	for r := range n {
		inputs[r] = scaledTensor(r)
	}
	results := make([][]float32, n)
	eachRank(t, n, func(w *worker.Worker, r int) {
		data := append([]float32(nil), inputs[r]...)
		if err := w.AllReduceFloat32Scaled(context.Background(), data, bucket); err != nil {
			t.Error(err)
			return
		}
		results[r] = data
		if s := w.Snapshot(); s.Overflows != 0 || s.BypassSent != 0 {
			t.Errorf("rank %d: a bucket in range left the fixed-point path: %+v", r, s)
		}
	})
	if t.Failed() {
		return
	}
	for b := 0; b < len(inputs[0])/bucket; b++ {
		var m float64
		for r := range n {
			for _, x := range inputs[r][b*bucket : (b+1)*bucket] {
				m = max(m, math.Abs(float64(x)))
			}
		}
		// The scale rule recomputed here from the bucket's largest magnitude.
		scale := float64(worker.DefaultScale)
		if m > 0 {
			_, e := math.Frexp(m)
			e = max(e, worker.MinScaleExp)
			scale = math.Ldexp(1, 30-e-2) // ceil(log2 4) = 2
		}
		worst := 0.0
		for i := b * bucket; i < (b+1)*bucket; i++ {
			var s float64
			var q int64
			for r := range n {
				s += float64(inputs[r][i])
				q += int64(math.Round(float64(inputs[r][i]) * scale))
			}
			want := float32(float64(q) / scale)
			bound := worker.ScaledErrorBound(m, s, n)
			for r := range n {
				if got := results[r][i]; got != want || math.Abs(float64(got)-s) > bound {
					t.Fatalf("bucket %d value %d rank %d: %g, want %g (exact sum %g, bound %g)", b, i, r, got, want, s, bound)
				}
			}
			worst = max(worst, math.Abs(float64(results[0][i])-s)/max(m, 1e-300))
		}
		// The point of per-bucket scales: the error is relative to the bucket's own magnitude (with
		// one scale of 2^20 for all, bucket 0 would be lost: 2^-21 absolute error on values of 1e-7).
		if m > 0 && worst > 0x1p-21 { // 2^-26 from the scale, up to 2^-22 from the float32 result
			t.Errorf("bucket %d (max %g): error %g of its magnitude", b, m, worst)
		}
	}
}

func TestAllReduceFloat32ScaledOutOfRange(t *testing.T) {
	const n = 2
	eachRank(t, n, func(w *worker.Worker, r int) {
		if w.ChunkValues() != chunk {
			t.Fatalf("%d values a chunk, want %d", w.ChunkValues(), chunk)
		}
		// Bucket 0 beyond the largest class (takes the exact FLOAT path), bucket 1 with a NaN.
		data := make([]float32, 2*chunk)
		data[0], data[1] = 3e9, float32(r+1)
		data[chunk] = float32(math.NaN())
		data[chunk+1] = 0.5
		if err := w.AllReduceFloat32Scaled(context.Background(), data, chunk); err != nil {
			t.Error(err)
			return
		}
		if data[0] != 6e9 || data[1] != 3 || !math.IsNaN(float64(data[chunk])) || data[chunk+1] != 1 {
			t.Errorf("rank %d: %v %v %v %v", r, data[0], data[1], data[chunk], data[chunk+1])
		}
		if err := w.AllReduceFloat32Scaled(context.Background(), data, -1); err == nil {
			t.Error("a negative bucket was accepted")
		}
	})
}

func TestAllReduceManyScaled(t *testing.T) {
	const n = 3
	// A float tensor of three buckets of K (tiny values, large values, a partial bucket), an int
	// tensor whose first sum overflows, a small float tensor.
	input := func(r int) []float32 {
		x := make([]float32, 2*chunk+10)
		for i := range x {
			x[i] = float32(i+1+r) * 1e-9
			if i >= chunk {
				x[i] = float32(i+r) * 1e2
			}
		}
		return x
	}
	eachRank(t, n, func(w *worker.Worker, r int) {
		big, ints, small := input(r), []int32{math.MaxInt32 - 1, int32(r), 5}, []float32{0.25, -0.5}
		err := w.AllReduceManyScaled(context.Background(), []worker.Tensor{{Float32: big}, {Int32: ints}, {Float32: small}}, chunk)
		var oe *worker.OverflowError
		if !errors.As(err, &oe) || len(oe.Tensors) != 1 || oe.Tensors[0] != 1 {
			t.Errorf("rank %d: %v, want an overflow of tensor 1 (the caller's index)", r, err)
			return
		}
		for b := 0; b < len(big); b += chunk {
			var m float64
			for q := range n {
				for _, x := range input(q)[b:min(len(big), b+chunk)] {
					m = max(m, float64(x))
				}
			}
			for i := b; i < min(len(big), b+chunk); i++ {
				var s float64
				for q := range n {
					s += float64(input(q)[i])
				}
				if d := math.Abs(float64(big[i]) - s); d > worker.ScaledErrorBound(m, s, n) {
					t.Errorf("rank %d value %d: %g, exact %g, beyond the bound of its bucket", r, i, big[i], s)
					return
				}
			}
		}
		if ints[0] != math.MaxInt32 || ints[1] != 3 || ints[2] != 15 || small[0] != 0.75 || small[1] != -1.5 {
			t.Errorf("rank %d: ints %v small %v", r, ints, small)
		}
	})
}
