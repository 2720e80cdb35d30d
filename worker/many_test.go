package worker_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// AllReduceMany over a mix of int32 and float32 tensors of awkward sizes (empty, shorter than a
// chunk, spanning chunk boundaries, two float scales): every value is the exact sum, and an int32
// tensor whose sum does not fit is named in the OverflowError while its neighbours stay exact.
func TestAllReduceMany(t *testing.T) {
	const n = 3
	sizes := []int{1, 0, 100, 64, 7, 300, 5, 1000}
	kinds := []string{"i", "i", "i", "f", "f", "g", "i", "i"} // f: default scale, g: scale 1024
	eachRank(t, n, func(w *worker.Worker, r int) {
		value := func(rank, tensor, i int) int32 { return int32((rank+1)*1000 + tensor*100 + i%97 - 500) }
		ts := make([]worker.Tensor, len(sizes))
		for k, size := range sizes {
			switch kinds[k] {
			case "i":
				ts[k].Int32 = make([]int32, size)
				for i := range size {
					ts[k].Int32[i] = value(r, k, i)
				}
			default:
				ts[k].Float32 = make([]float32, size)
				if kinds[k] == "g" {
					ts[k].Scale = 1024
				}
				for i := range size {
					ts[k].Float32[i] = float32(value(r, k, i)) / 4
				}
			}
		}
		if err := w.AllReduceMany(context.Background(), ts); err != nil {
			t.Error(err)
			return
		}
		for k, tn := range ts {
			for i := range sizes[k] {
				var sum int64
				for q := range n {
					sum += int64(value(q, k, i))
				}
				if tn.Int32 != nil && int64(tn.Int32[i]) != sum || tn.Float32 != nil && tn.Float32[i] != float32(sum)/4 {
					t.Errorf("rank %d tensor %d value %d: %v%v, want %d", r, k, i, tn.Int32, tn.Float32, sum)
					return
				}
			}
		}
		// Tensor 1 overflows (the PS sums it exactly and it does not fit); 0 and 2 stay exact.
		big := []worker.Tensor{{Int32: []int32{1, 2}}, {Int32: []int32{math.MaxInt32 / 2, 5}}, {Int32: []int32{3}}}
		err := w.AllReduceMany(context.Background(), big)
		var oe *worker.OverflowError
		if !errors.As(err, &oe) || len(oe.Tensors) != 1 || oe.Tensors[0] != 1 {
			t.Errorf("overflow: %v, want an OverflowError naming tensor 1", err)
		}
		if big[0].Int32[1] != 2*n || big[2].Int32[0] != 3*n {
			t.Errorf("tensors beside the overflow: %v %v", big[0].Int32, big[2].Int32)
		}
	})
}

func TestAllReduceManyErrors(t *testing.T) {
	w, err := worker.New(config(0, 1), hub(t, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range [][]worker.Tensor{
		{{Int32: []int32{1}, Float32: []float32{1}}},
		{{Float32: []float32{1}, Scale: -1}},
		{{Float32: []float32{1}, Scale: math.Inf(1)}},
	} {
		if err := w.AllReduceMany(context.Background(), ts); !errors.Is(err, worker.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", ts, err)
		}
	}
}

// A data packet lost on the way to the PS is resent as soon as three later chunks have completed,
// not when its timer (5 s here) expires.
func TestFastRetransmit(t *testing.T) {
	const n = 2
	var dropped atomic.Bool
	// Rank 0's first transmission of chunk 5 is lost.
	ends := hubWith(t, n, links{toPS: func(rank int, f *wire.Frame) bool {
		return !(rank == 0 && f.INA.Seq == 5 && f.INA.Flags&wire.FlagResend == 0 && !dropped.Swap(true))
	}})
	var wg sync.WaitGroup
	stats := make([]worker.StatsSnapshot, n)
	for r := range n {
		cfg := config(r, n)
		cfg.RTO, cfg.MinRTO, cfg.MaxRTO, cfg.ProgressTimeout = 5*time.Second, 5*time.Second, 5*time.Second, 20*time.Second
		w, err := worker.New(cfg, ends[r])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := make([]int32, 64*32)
			for i := range v {
				v[i] = int32(i)
			}
			if err := w.AllReduceInt32(context.Background(), v); err != nil {
				t.Error(err)
			}
			if v[5*64+1] != int32(n*(5*64+1)) {
				t.Errorf("rank %d: chunk 5 holds %d", r, v[5*64+1])
			}
			stats[r] = w.Snapshot()
		}()
	}
	wg.Wait()
	if !dropped.Load() {
		t.Fatal("nothing was dropped")
	}
	if s := stats[0]; s.FastResent < 1 || s.Resent != s.FastResent {
		t.Errorf("rank 0 resent %d, %d of them fast: the loss was not repaired by fast retransmission", s.Resent, s.FastResent)
	}
}
