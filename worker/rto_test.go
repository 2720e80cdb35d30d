package worker_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/worker"
	"github.com/inapack/inapack/worker/transport"
)

// When the round trip jumps far above the timer (here results start arriving 60 ms late, the
// timer being 10 ms), the timer backs off (RFC 6298 5.5) until chunks complete without a
// retransmission and the estimate catches up: a few timeouts, not several for every chunk.
func TestTimerBacksOffWhenTheDelayJumps(t *testing.T) {
	const n, chunks, slowFrom = 2, 96, 16
	srv, err := ps.New(ps.Config{MAC: psMAC, IP: psIP, Jobs: []ps.JobConfig{{Job: 1, Workers: n, Window: 16}}})
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]*transport.Mem, n)
	psEnd := transport.NewMem(func(b []byte) error {
		var f wire.Frame
		delay := time.Duration(0)
		if f.Unmarshal(b) == nil && f.INA.Seq >= slowFrom {
			delay = 60 * time.Millisecond
		}
		b = append([]byte(nil), b...)
		time.AfterFunc(delay, func() {
			for _, e := range ends {
				e.Deliver(b)
			}
		})
		return nil
	}, 4096)
	for i := range ends {
		ends[i] = transport.NewMem(func(b []byte) error { psEnd.Deliver(b); return nil }, 4096)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, psEnd) }()
	defer func() { cancel(); <-done }()
	var wg sync.WaitGroup
	stats := make([]worker.StatsSnapshot, n)
	for r := range n {
		cfg := worker.Config{Job: 1, Rank: r, Workers: n, Window: 8, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(r)}, DstMAC: psMAC,
			SrcIP: net.IPv4(10, 0, 1, byte(r+1)), DstIP: psIP, ProgressTimeout: 10 * time.Second,
			RTO: 10 * time.Millisecond, MinRTO: 10 * time.Millisecond}
		w, err := worker.New(cfg, ends[r])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := make([]int32, worker.K*chunks)
			if err := w.AllReduceInt32(context.Background(), v); err != nil {
				t.Error(err)
			}
			stats[r] = w.Snapshot()
		}()
	}
	wg.Wait()
	for r, s := range stats {
		// Without the backoff every slow chunk was resent about twice (164 of 80 here), with it
		// about a quarter are, while the estimate catches up.
		if s.Resent > (chunks-slowFrom)/2 {
			t.Errorf("rank %d resent %d of %d chunks whose results were only late", r, s.Resent, chunks-slowFrom)
		}
	}
}
