package worker_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

var (
	psMAC = net.HardwareAddr{2, 0, 0, 0, 0, 0x64}
	psIP  = net.IPv4(10, 0, 0, 100)
)

func config(rank, workers int) worker.Config {
	return worker.Config{Job: 1, Rank: rank, Workers: workers, Window: 16, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(rank)},
		DstMAC: psMAC, SrcIP: net.IPv4(10, 0, 1, byte(rank+1)), DstIP: psIP, ProgressTimeout: 2 * time.Second}
}

// hub connects workers straight to a PS, as a switch with INA disabled would: every data packet
// reaches the PS alone, every result reaches every worker.
func hub(t *testing.T, workers int) []*transport.Mem { return hubWith(t, workers, links{}) }

// links are hub's faults: toPS (nil: none) decides whether rank's frame reaches the PS, fromPS
// (nil: none) delays the PS's frames to every worker; sent (nil: none) sees every frame a worker
// sends, as it was sent (a copy it may keep).
type links struct {
	toPS   func(rank int, f *wire.Frame) bool
	fromPS func(f *wire.Frame) time.Duration
	sent   func(rank int, b []byte)
}

// hubWith is hub with faults on its links.
func hubWith(t *testing.T, workers int, l links) []*transport.Mem {
	t.Helper()
	srv, err := ps.New(ps.Config{MAC: psMAC, IP: psIP, Jobs: []ps.JobConfig{{Job: 1, Workers: workers, Window: 16}}})
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]*transport.Mem, workers)
	toAll := func(b []byte) {
		for _, e := range ends {
			e.Deliver(b)
		}
	}
	psEnd := transport.NewMem(func(b []byte) error {
		var f wire.Frame
		if l.fromPS == nil || f.Unmarshal(b) != nil {
			toAll(b)
		} else if d := l.fromPS(&f); d == 0 {
			toAll(b)
		} else {
			b = append([]byte(nil), b...)
			time.AfterFunc(d, func() { toAll(b) })
		}
		return nil
	}, 1024)
	for i := range ends {
		ends[i] = transport.NewMem(func(b []byte) error {
			if l.sent != nil {
				l.sent(i, b)
			}
			var f wire.Frame
			if l.toPS == nil || f.Unmarshal(b) != nil || l.toPS(i, &f) {
				psEnd.Deliver(b)
			}
			return nil
		}, 1024)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, psEnd) }()
	t.Cleanup(func() { cancel(); <-done })
	return ends
}

// eachRank runs f for ranks 0..n-1 of one job, each in its own goroutine, connected by hub.
func eachRank(t *testing.T, n int, f func(w *worker.Worker, rank int)) {
	t.Helper()
	ends := hub(t, n)
	var wg sync.WaitGroup
	for r := range n {
		w, err := worker.New(config(r, n), ends[r])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w, r)
		}()
	}
	wg.Wait()
}

func TestAllReduceThroughPS(t *testing.T) {
	const n = 3
	eachRank(t, n, func(w *worker.Worker, r int) {
		for it := range 3 {
			ints := make([]int32, 1000)
			worker.Synthetic(5, 1, r, it, ints)
			if err := w.AllReduceInt32(context.Background(), ints); err != nil {
				t.Error(err)
				return
			}
			want := make([]int64, len(ints))
			worker.SyntheticSum(5, 1, n, it, want)
			for i := range ints {
				if int64(ints[i]) != want[i] {
					t.Errorf("rank %d iter %d value %d: %d, want %d", r, it, i, ints[i], want[i])
					return
				}
			}
		}
		floats := []float32{0.5, -1.25, 3}
		if err := w.AllReduceFloat32(context.Background(), floats, 1024); err != nil || floats[0] != 1.5 || floats[1] != -3.75 || floats[2] != 9 {
			t.Errorf("rank %d float all-reduce: %v %v", r, floats, err)
		}
		if s := w.Snapshot(); s.Results != 3*16+1 || s.DataSent < s.Results {
			t.Errorf("rank %d stats %+v", r, s)
		}
	})
}

func TestNoProgressIsAClearError(t *testing.T) {
	a, _ := transport.Pipe(16) // nobody answers
	cfg := config(0, 2)
	// Timers far apart, so the retransmission checked below happens long before the give-up
	// however the goroutines are scheduled.
	cfg.RTO, cfg.MinRTO, cfg.ProgressTimeout = time.Millisecond, time.Millisecond, 500*time.Millisecond
	w, err := worker.New(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	err = w.AllReduceInt32(context.Background(), make([]int32, 100))
	if !errors.Is(err, worker.ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	if s := w.Snapshot(); s.Resent == 0 || s.WindowCuts == 0 {
		t.Errorf("no retransmission or window cut before giving up: %+v", s)
	}
	if err := w.AllReduceInt32(context.Background(), make([]int32, 1)); !errors.Is(err, worker.ErrClosedWorker) {
		t.Errorf("after a failure: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	a, _ := transport.Pipe(1)
	for _, mod := range []func(*worker.Config){
		func(c *worker.Config) { c.Job = 0 },
		func(c *worker.Config) { c.Job = wire.MaxJobs },
		func(c *worker.Config) { c.Workers = 33 },
		func(c *worker.Config) { c.Rank = 2 },
		func(c *worker.Config) { c.Member = wire.MaxMembers },
		func(c *worker.Config) { c.Window = 0 },
		func(c *worker.Config) { c.SlotBase = wire.NumSlots - 4 },
		func(c *worker.Config) { c.DstIP = nil },
	} {
		c := config(0, 2)
		mod(&c)
		if _, err := worker.New(c, a); !errors.Is(err, worker.ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", c, err)
		}
	}
	w, _ := worker.New(config(0, 2), a)
	if err := w.AllReduceFloat32(context.Background(), []float32{1}, -1); !errors.Is(err, worker.ErrConfig) {
		t.Errorf("negative scale: %v", err)
	}
}

// BenchmarkPacketRate is the worker's packet rate against a responder that turns each data packet
// into its result at once (no switch, no PS work): one op = one chunk sent and completed. Its
// allocs/op are the in-memory transport's (Mem.Send keeps a copy of each frame, both ways); the
// worker allocates nothing per chunk (-memprofile). Bytes are tensor bytes: 63 values a chunk
// with the integrity lane, 64 without (BenchmarkPacketRateNoIntegrity).
func BenchmarkPacketRate(b *testing.B) { packetRate(b, false) }

func BenchmarkPacketRateNoIntegrity(b *testing.B) { packetRate(b, true) }

func packetRate(b *testing.B, noIntegrity bool) {
	a, z := transport.Pipe(4096)
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := z.Recv(buf, time.Now().Add(50*time.Millisecond))
			select {
			case <-stop:
				return
			default:
			}
			if err != nil {
				continue
			}
			buf[42] = wire.Version<<4 | uint8(wire.TypeResult)
			_ = z.Send(buf[:n])
		}
	}()
	defer close(stop)
	cfg := config(0, 1)
	cfg.Window, cfg.InitialWindow, cfg.NoIntegrity = 256, 256, noIntegrity
	w, err := worker.New(cfg, a)
	if err != nil {
		b.Fatal(err)
	}
	k := w.ChunkValues()
	data := make([]int32, k*4096)
	b.SetBytes(int64(4 * k))
	b.ResetTimer()
	for done := 0; done < b.N; done += 4096 {
		if err := w.AllReduceInt32(context.Background(), data[:k*min(4096, b.N-done)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
}
