package netpack

import (
	"fmt"
	"testing"
)

func BenchmarkPlaceJob(b *testing.B) {
	for _, m := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("machines=%d", m), func(b *testing.B) {
			r, err := RunBench(BenchConfig{Policy: "netpack", Machines: m, Jobs: b.N, Busy: 0.7, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(r.PerJob().Nanoseconds())/1e6, "ms/job")
		})
	}
}

func BenchmarkBatch4000(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r, err := RunBench(BenchConfig{Policy: "netpack", Machines: 10000, Jobs: 4000, Batch: true, Busy: 0.7, Seed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Elapsed.Seconds(), "s/batch")
	}
}

func TestRunBenchSmall(t *testing.T) {
	for _, batch := range []bool{false, true} {
		r, err := RunBench(BenchConfig{Policy: "netpack", Machines: 40, Jobs: 50, Batch: batch, Busy: 0.5, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Placed == 0 {
			t.Fatalf("batch=%v: nothing placed", batch)
		}
	}
}
