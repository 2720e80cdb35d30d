package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// A peer that starts a call late (here rank 1 starts once rank 0's timer has resent its first
// chunk) finds rank 0's partial sums still in their slots: rank 0's first retry of a chunk that no
// later chunk has overtaken goes out without RESEND, and the switch drops it as a duplicate. With
// a RESEND the switch flushed rank 0's partial to the PS, rank 1's packet then claimed the slot
// alone (protocol step 3), and that chunk completed only through rank 1's own timer. In make
// bench's tail loop at 1% loss, workers whose windows differed did this to each other, and all
// four backed off in lockstep for up to 1.6 s.
func TestLatePeerFindsItsSlotsUnflushed(t *testing.T) {
	const n, chunks, seed = 2, 8, 7
	c := newCluster(t, model.DefaultSettings(), Impairment{}, 1, []jobSpec{{id: 1, workers: n, priority: 1, window: 8, ina: true, killRank: -1}})
	defer c.close()
	retried := make(chan struct{})
	ws := make([]*worker.Worker, n)
	for r := range n {
		var tr transport.Transport = c.fab.Attach(workerPort(1, r))
		if r == 0 {
			tr = &firstRetry{Mem: tr.(*transport.Mem), seen: map[uint32]bool{}, retried: retried}
		}
		// A 100 ms timer: rank 0's next retry, a RESEND after the doubled timer, is 200 ms
		// after the one that starts rank 1.
		w, err := worker.New(worker.Config{Job: 1, Rank: r, Workers: n, Window: 8,
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(r)}, DstMAC: psMAC, SrcIP: net.IPv4(10, 0, 1, byte(r+1)), DstIP: psIP,
			RTO: 100 * time.Millisecond, MinRTO: 100 * time.Millisecond, ProgressTimeout: 10 * time.Second}, tr)
		must(t, err)
		ws[r] = w
	}
	size := ws[0].ChunkValues() * chunks
	want := make([]int64, size)
	worker.SyntheticSum(seed, 1, n, 0, want)
	var wg sync.WaitGroup
	for r, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r == 1 {
				<-retried
			}
			v := tensor(seed, 1, r, 0, size)
			if err := w.AllReduceInt32(context.Background(), v); err != nil {
				t.Errorf("rank %d: %v", r, err)
				return
			}
			for i := range v {
				if int64(v[i]) != want[i] {
					t.Errorf("rank %d: value %d is %d, want %d", r, i, v[i], want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	s0, s1 := ws[0].Snapshot(), ws[1].Snapshot()
	flushed := c.sw.JobEvents(1)[wire.EventFlushed].Packets
	if s0.PlainResent == 0 || flushed != 0 || s1.Resent != 0 {
		t.Errorf("rank 0 sent %d plain retries, the switch flushed %d slots, rank 1 resent %d chunks: want a plain retry, no flush, no retransmission by the late peer",
			s0.PlainResent, flushed, s1.Resent)
	}
}

// firstRetry closes retried when its worker sends a chunk for the second time.
type firstRetry struct {
	*transport.Mem
	seen    map[uint32]bool
	once    sync.Once
	retried chan struct{}
}

func (f *firstRetry) Send(b []byte) error {
	var fr wire.Frame
	if fr.Unmarshal(b) == nil && fr.INA.Type == wire.TypeData {
		if f.seen[fr.INA.Seq] {
			defer f.once.Do(func() { close(f.retried) })
		}
		f.seen[fr.INA.Seq] = true
	}
	return f.Mem.Send(b)
}
