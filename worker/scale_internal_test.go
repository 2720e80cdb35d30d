package worker

import (
	"math"
	"testing"
)

func TestExponentExchangeDecodesTheMax(t *testing.T) {
	// Any number of workers up to 32, any classes: the summed one-hot counters decode to the max
	// class and never carry into a neighbour.
	for workers := 1; workers <= 32; workers++ {
		for top := 0; top < scaleClasses; top += 7 {
			lanes := make([]int32, lanesPerBucket)
			for r := range workers {
				c := top
				if r > 0 {
					c = (top * r) / workers // at or below top
				}
				lanes[c/countersInLane] += 1 << (counterBits * (c % countersInLane))
			}
			if got := topClass(lanes); got != top {
				t.Fatalf("%d workers, top class %d: decoded %d", workers, top, got)
			}
		}
	}
	if topClass(make([]int32, lanesPerBucket)) != -1 {
		t.Error("an all-zero bucket has a class")
	}
	for _, tc := range []struct {
		xs   []float32
		want int
		ok   bool
	}{
		{[]float32{0, 0}, 0, false},
		{[]float32{0.75, -1}, 1 - MinScaleExp, true}, // 1 < 2^1
		{[]float32{1e-30}, 0, true},                  // clamped at the bottom
		{[]float32{1e30}, scaleClasses - 1, true},    // clamped at the top
		{[]float32{1, float32(math.NaN())}, scaleClasses - 1, true},
		{[]float32{float32(math.Inf(-1))}, scaleClasses - 1, true},
	} {
		if c, ok := bucketClass(tc.xs); c != tc.want || ok != tc.ok {
			t.Errorf("bucketClass(%v) = %d, %v; want %d, %v", tc.xs, c, ok, tc.want, tc.ok)
		}
	}
	// The scale keeps N worst-case values inside int32: N * (2^E * s + 1/2) < 2^31.
	for _, workers := range []int{1, 2, 3, 4, 8, 32} {
		for c := range scaleClasses {
			s := BucketScale(c, workers)
			if worst := float64(workers) * (math.Ldexp(1, MinScaleExp+c)*s + 0.5); worst >= math.MaxInt32 {
				t.Errorf("%d workers class %d: scale %g reaches %g", workers, c, s, worst)
			}
		}
	}
}
