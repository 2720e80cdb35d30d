package worker_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// hubThreads is hub for members on several threads: rank r has threads[r] endpoints, and a
// result reaches the one whose index is its seq mod threads[r] (what a fanout by chunk does for
// ring pairs). seen, if set, gets every data frame: the rank, the endpoint it left by, the frame.
func hubThreads(t *testing.T, threads []int, seen func(rank, end int, f *wire.Frame)) [][]transport.Transport {
	t.Helper()
	srv, err := ps.New(ps.Config{MAC: psMAC, IP: psIP, Jobs: []ps.JobConfig{{Job: 1, Workers: len(threads), Window: 16}}})
	if err != nil {
		t.Fatal(err)
	}
	ends := make([][]*transport.Mem, len(threads))
	psEnd := transport.NewMem(func(b []byte) error {
		var f wire.Frame
		if f.Unmarshal(b) != nil {
			return nil
		}
		for _, es := range ends {
			es[f.INA.Seq%uint32(len(es))].Deliver(append([]byte(nil), b...))
		}
		return nil
	}, 4096)
	out := make([][]transport.Transport, len(threads))
	var mu sync.Mutex
	for r, n := range threads {
		for k := range n {
			e := transport.NewMem(func(b []byte) error {
				if seen != nil {
					var f wire.Frame
					if f.Unmarshal(b) == nil {
						mu.Lock()
						seen(r, k, &f)
						mu.Unlock()
					}
				}
				psEnd.Deliver(b)
				return nil
			}, 1024)
			ends[r] = append(ends[r], e)
			out[r] = append(out[r], e)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, psEnd) }()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// Members on 1, 2 and 4 threads all-reduce together, exactly: each thread sends only the chunks
// whose seq is its index mod the threads, on the slots of that class (the threads own disjoint
// slots), and an overflow on chunks of two threads is reported with the call's chunk indexes.
func TestGroupAllReduce(t *testing.T) {
	threads := []int{1, 2, 4}
	var bad []string
	tr := hubThreads(t, threads, func(rank, end int, f *wire.Frame) {
		n := uint32(threads[rank])
		if f.INA.Seq%n != uint32(end) || uint32(f.INA.Slot)%n != uint32(end) {
			bad = append(bad, "seq/slot off its thread")
		}
	})
	n := len(threads)
	var wg sync.WaitGroup
	for r := range n {
		g, err := worker.NewGroup(config(r, n), tr[r])
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 3 {
				ints := make([]int32, 1000+it*77) // calls of 16 to 18 chunks: the threads' shares shift
				worker.Synthetic(5, 1, r, it, ints)
				if err := g.AllReduceInt32(context.Background(), ints); err != nil {
					t.Error(err)
					return
				}
				want := make([]int64, len(ints))
				worker.SyntheticSum(5, 1, n, it, want)
				for i := range ints {
					if int64(ints[i]) != want[i] {
						t.Errorf("rank %d (%d threads) iter %d value %d: %d, want %d", r, threads[r], it, i, ints[i], want[i])
						return
					}
				}
			}
			floats := make([]float32, 300)
			for i := range floats {
				floats[i] = float32(i) / 8
			}
			if err := g.AllReduceFloat32(context.Background(), floats, 1024); err != nil {
				t.Error(err)
			}
			for i, v := range floats {
				if v != float32(3*i)/8 {
					t.Errorf("rank %d float value %d: %v, want %v", r, i, v, float32(3*i)/8)
					break
				}
			}
			// Chunks 1 and 2 (values 63.. and 126..) overflow: two threads of rank 1's two.
			big := make([]int32, 63*5)
			big[63], big[2*63+5] = math.MaxInt32, math.MaxInt32
			var oe *worker.OverflowError
			if err := g.AllReduceInt32(context.Background(), big); !errors.As(err, &oe) || !slices.Equal(oe.Chunks, []int{1, 2}) || !slices.Equal(oe.Tensors, []int{0}) {
				t.Errorf("rank %d: overflow on chunks 1 and 2 gave %v", r, err)
			}
			// Per-bucket scales agreed first (a scale exchange on the threads, then the data):
			// values k/8 are exact at any scale of 8 or more.
			scaled := make([]float32, 2000)
			for i := range scaled {
				scaled[i] = float32(i%500) / 8
			}
			if err := g.AllReduceFloat32Scaled(context.Background(), scaled, 630); err != nil {
				t.Error(err)
			}
			for i, v := range scaled {
				if want := float32(3*(i%500)) / 8; v != want {
					t.Errorf("rank %d scaled value %d: %v, want %v", r, i, v, want)
					break
				}
			}
			if s := g.Snapshot(); s.Results == 0 || s.DataSent < s.Results {
				t.Errorf("rank %d stats %+v", r, s)
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d frames left by the wrong thread", len(bad))
	}
}

func TestGroupConfigErrors(t *testing.T) {
	a, _ := transport.Pipe(4)
	b, _ := transport.Pipe(4)
	c, _ := transport.Pipe(4)
	if _, err := worker.NewGroup(config(0, 1), []transport.Transport{a, b, c}); !errors.Is(err, worker.ErrConfig) {
		t.Errorf("3 threads for a window of 16: %v", err)
	}
	cfg := config(0, 1)
	cfg.Window = 48
	if _, err := worker.NewGroup(cfg, []transport.Transport{a, b, c}); !errors.Is(err, worker.ErrConfig) {
		t.Errorf("3 threads (not a power of two) for a window of 48: %v", err)
	}
	if _, err := worker.NewGroup(config(0, 1), nil); !errors.Is(err, worker.ErrConfig) {
		t.Errorf("no threads: %v", err)
	}
}
