package main

// #include <stdint.h>
import "C"

import (
	"context"
	"fmt"
	"time"
)

// inapack_bench_go runs iters all-reduces of n values from Go on a buffer of its own (float32 with
// the scale arguments of inapack_allreduce_float32 if isFloat, else int32) and writes the seconds
// they took to *seconds: the baseline that python/inapack/bench.py compares the bridge against.
//
//export inapack_bench_go
func inapack_bench_go(h C.int64_t, n C.int64_t, iters C.int, isFloat C.int, scale C.double, bucket C.int64_t, seconds *C.double, errBuf *C.char, errLen C.int) C.int {
	return call(h, errBuf, errLen, func(w allReducer) error {
		if n < 1 || n > 1<<30 || iters < 1 || seconds == nil {
			return fmt.Errorf("%w: bench of %d values x %d", errConfig, n, iters)
		}
		// The input, refilled before every call (all-reduce works in place) by a copy, as the
		// Python side does with numpy.
		srcI, ints := make([]int32, n), make([]int32, n)
		srcF, floats := make([]float32, n), make([]float32, n)
		for i := range srcI {
			srcI[i], srcF[i] = int32(i%1000), float32(i%1000)/1024
		}
		start := time.Now()
		for range iters {
			var err error
			if isFloat != 0 {
				copy(floats, srcF)
				err = allReduceFloat(w, floats, float64(scale), int(bucket))
			} else {
				copy(ints, srcI)
				err = w.AllReduceInt32(context.Background(), ints)
			}
			if err != nil {
				return err
			}
		}
		*seconds = C.double(time.Since(start).Seconds())
		return nil
	})
}
