package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// Frames that are not results of this call (garbage, other jobs, unknown seqs, data packets) are
// counted and ignored; the call still completes with the right values.
func TestHostileFramesAreIgnored(t *testing.T) {
	a, z := transport.Pipe(256)
	defer z.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := z.Recv(buf, time.Time{})
			if err != nil {
				return
			}
			var f wire.Frame
			if f.Unmarshal(buf[:n]) != nil {
				continue
			}
			res := f
			res.INA.Type = wire.TypeResult
			other, early, late := res, res, res
			other.INA.Job++
			early.INA.Seq -= 1000
			late.INA.Seq += 1000
			for _, b := range [][]byte{nil, {1, 2, 3}, res.Marshal()[:100], append(res.Marshal(), 0), f.Marshal(),
				other.Marshal(), early.Marshal(), late.Marshal()} {
				_ = z.Send(b)
			}
			for i := range res.INA.Values {
				res.INA.Values[i] *= 2 // the "sum" of two workers with equal tensors
			}
			_ = z.Send(res.Marshal())
		}
	}()
	cfg := config(0, 1)
	// No retransmission may add frames to the exact counts below, however slow the machine.
	cfg.RTO, cfg.MinRTO, cfg.MaxRTO, cfg.ProgressTimeout = time.Minute, time.Minute, time.Minute, time.Minute
	w, err := worker.New(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]int32, 3*worker.K+5)
	for i := range data {
		data[i] = int32(i) - 100
	}
	if err := w.AllReduceInt32(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	for i, v := range data {
		if v != 2*(int32(i)-100) {
			t.Fatalf("value %d: %d, want %d", i, v, 2*(int32(i)-100))
		}
	}
	// Per chunk: six frames that are not results of job 1 (empty, short, cut, too long, a data
	// packet, another job) and two results for seqs outside the call.
	if s := w.Snapshot(); s.RxErrors != 6*4 || s.ResultsIgnored != 2*4 || s.Results != 4 {
		t.Errorf("stats %+v: want 24 rx errors, 8 ignored results, 4 results", s)
	}
}
