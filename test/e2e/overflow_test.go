package e2e

import (
	"context"
	"errors"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// oneJob runs a single all-reduce call of job 1 with the given per-rank inputs through the model,
// with f doing the call for each worker.
func oneJob(t *testing.T, n int, imp Impairment, f func(w *worker.Worker, rank int) error) (*cluster, []error) {
	t.Helper()
	spec := jobSpec{id: 1, workers: n, priority: 1, window: 8, ina: true, killRank: -1}
	c := newCluster(t, model.DefaultSettings(), imp, 3, []jobSpec{spec})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		w, err := worker.New(worker.Config{Job: 1, Rank: r, Workers: n, Window: 8,
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(r)}, DstMAC: psMAC, SrcIP: net.IPv4(10, 0, 1, byte(r+1)), DstIP: psIP,
			ProgressTimeout: 30 * time.Second}, c.fab.Attach(workerPort(1, r)))
		must(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(w, r) }()
	}
	wg.Wait()
	return c, errs
}

// A sum at the int32 bound (indistinguishable from a clipped one), and partial sums the switch may
// saturate depending on arrival order, go through the PS's exact path and come back exact; chunks
// without overflow stay in the switch.
func TestInt32OverflowPathExact(t *testing.T) {
	inputs := [][]int32{make([]int32, 3*64), make([]int32, 3*64), make([]int32, 3*64)}
	for i := range 3 * 64 {
		inputs[0][i], inputs[1][i], inputs[2][i] = int32(i), 2*int32(i), -int32(i)
	}
	inputs[0][70], inputs[1][70], inputs[2][70] = 2_000_000_000, 2_000_000_000, -2_000_000_000 // chunk 1
	inputs[0][71], inputs[1][71], inputs[2][71] = math.MaxInt32, 0, 0
	out := make([][]int32, 3)
	c, errs := oneJob(t, 3, Impairment{Loss: 0.02, Dup: 0.02, Reorder: 0.02}, func(w *worker.Worker, r int) error {
		out[r] = append([]int32(nil), inputs[r]...)
		return w.AllReduceInt32(context.Background(), out[r])
	})
	defer c.close()
	for r, err := range errs {
		must(t, err)
		for i, v := range out[r] {
			if want := inputs[0][i] + inputs[1][i] + inputs[2][i]; v != want {
				t.Fatalf("rank %d value %d: %d, want %d", r, i, v, want)
			}
		}
	}
	pc, _ := c.ps.Counters(1)
	if pc.OverflowResults == 0 || pc.BypassResults != 1 {
		t.Errorf("PS: %v; want overflow results and exactly one bypass result", pc)
	}
}

// An int32 sum that does not fit is an error naming the chunk, not a wrong number.
func TestInt32SumTooLargeIsError(t *testing.T) {
	out := make([][]int32, 2)
	c, errs := oneJob(t, 2, Impairment{}, func(w *worker.Worker, r int) error {
		out[r] = make([]int32, 130)
		out[r][129] = math.MaxInt32 - 5 // chunk 2
		out[r][3] = 7
		return w.AllReduceInt32(context.Background(), out[r])
	})
	defer c.close()
	for r, err := range errs {
		var oe *worker.OverflowError
		if !errors.As(err, &oe) || !errors.Is(err, worker.ErrOverflow) || len(oe.Chunks) != 1 || oe.Chunks[0] != 2 {
			t.Fatalf("rank %d: got %v, want an OverflowError for chunk 2", r, err)
		}
		if out[r][3] != 14 || out[r][129] != math.MaxInt32 {
			t.Errorf("rank %d: values %d, %d; want 14 (exact) and saturated", r, out[r][3], out[r][129])
		}
	}
	if pc, _ := c.ps.Counters(1); pc.IntOverflow != 1 {
		t.Errorf("PS int_overflow = %d, want 1", pc.IntOverflow)
	}
	if c.sw.Events()[wire.EventOverflow].Packets == 0 {
		t.Error("the switch saturated a sum but counted no overflow")
	}
}

// Float tensors: in-range values are within the documented bound; values beyond the fixed-point
// range take the FLOAT path and come back as the float64 sum rounded to float32.
func TestFloat32(t *testing.T) {
	const n = 4
	in := func(r, i int) float32 {
		if i >= 128 && i < 130 {
			return float32(r+1) * 3e5 // 3e5 * 2^20 does not fit in int32: chunk 2 goes the float path
		}
		return float32(math.Sin(float64(r*1000+i))) * 10
	}
	out := make([][]float32, n)
	c, errs := oneJob(t, n, Impairment{Loss: 0.01}, func(w *worker.Worker, r int) error {
		out[r] = make([]float32, 200)
		for i := range out[r] {
			out[r][i] = in(r, i)
		}
		return w.AllReduceFloat32(context.Background(), out[r], 0)
	})
	defer c.close()
	for r, err := range errs {
		must(t, err)
		for i, v := range out[r] {
			var exact float64
			for q := range n {
				exact += float64(in(q, i))
			}
			bound := n*0.5/worker.DefaultScale + math.Abs(exact)*math.Pow(2, -24)
			if d := math.Abs(float64(v) - exact); d > bound {
				t.Fatalf("rank %d value %d: %v, exact %v, error %g > bound %g", r, i, v, exact, d, bound)
			}
		}
	}
	if pc, _ := c.ps.Counters(1); pc.BypassResults != 1 {
		t.Errorf("PS bypass results = %d, want 1 (chunk 2)", pc.BypassResults)
	}
}
