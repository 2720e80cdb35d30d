package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// When the round trip jumps far above the timer (here results start arriving 60 ms late, the
// timer being 10 ms), the timer backs off (RFC 6298 5.5) until chunks complete without a
// retransmission and the estimate catches up: a few timeouts, not several for every chunk.
func TestTimerBacksOffWhenTheDelayJumps(t *testing.T) {
	const n, chunks, slowFrom = 2, 96, 16
	stats := runTimed(t, n, chunks, links{fromPS: func(f *wire.Frame) time.Duration {
		if f.INA.Seq >= slowFrom {
			return 60 * time.Millisecond
		}
		return 0
	}})
	for r, s := range stats {
		// Without the backoff every slow chunk was resent about twice (164 of 80 here), with it
		// about a quarter are, while the estimate catches up.
		if s.Resent > (chunks-slowFrom)/2 {
			t.Errorf("rank %d resent %d of %d chunks whose results were only late", r, s.Resent, chunks-slowFrom)
		}
		if s.TimerBackoffs == 0 {
			t.Errorf("rank %d: the timer never backed off", r)
		}
		// The chunks sent after the backoff give samples of the new delay.
		if s.RTO < 60*time.Millisecond {
			t.Errorf("rank %d: estimate %v at the end, with results 60 ms late: it never caught up", r, s.RTO)
		}
	}
}

// Config.Trace gets one record per backoff of the timer, naming the oldest chunk still out and how
// long the silence had lasted (at least half the 10 ms timer, as a backoff needs).
func TestTraceRecordsEveryBackoff(t *testing.T) {
	var buf bytes.Buffer // slog's handlers serialise their writes; runTuned returns once the workers end
	trace := slog.New(slog.NewJSONHandler(&buf, nil))
	s := runTuned(t, 2, 96, 8, links{fromPS: func(f *wire.Frame) time.Duration {
		if f.INA.Seq >= 16 {
			return 60 * time.Millisecond
		}
		return 0
	}}, func(c *worker.Config) {
		if c.Rank == 0 {
			c.Trace = trace
		}
	})[0]
	dec := json.NewDecoder(&buf)
	records := 0
	for dec.More() {
		var r struct {
			Msg                     string
			Job, Rank, Backoff, Out int
			Seq                     uint32
			SilenceMS               float64 `json:"silence_ms"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		records++
		if r.Msg != "timer backoff" || r.Job != 1 || r.Rank != 0 || r.Backoff < 1 || r.Out < 1 || r.Seq < 16 || r.SilenceMS < 5 {
			t.Errorf("record %d: %+v: want a backoff of job 1 rank 0 with a chunk from 16 on out, after 5 ms or more without results", records, r)
		}
	}
	if records == 0 || uint64(records) != s.TimerBackoffs {
		t.Errorf("%d trace records for %d backoffs", records, s.TimerBackoffs)
	}
}

// A chunk lost while the results of others keep arriving was lost, not late: its timer expires
// without backing off (a longer timer would only wait longer for it; at 5% loss the all-reduce
// took twice as long). Here rank 0's chunk 5 is dropped twice, so the fast retransmission is lost
// too and the timer has to recover it, after later chunks completed.
func TestTimerDoesNotBackOffForALossAmidResults(t *testing.T) {
	const n, chunks, lost = 2, 64, 5
	var mu sync.Mutex
	dropped := 0
	stats := runTimed(t, n, chunks, links{toPS: func(rank int, f *wire.Frame) bool {
		mu.Lock()
		defer mu.Unlock()
		if rank == 0 && f.INA.Seq == lost && dropped < 2 {
			dropped++
			return false
		}
		return true
	}})
	s := stats[0]
	if s.Resent < 2 || s.FastResent < 1 || s.Resent == s.FastResent {
		t.Fatalf("rank 0 resent %d (%d fast): want a fast retransmission and one by the timer", s.Resent, s.FastResent)
	}
	if s.TimerBackoffs != 0 {
		t.Errorf("rank 0's timer backed off %d times for a chunk lost amid results", s.TimerBackoffs)
	}
}

// runTimed all-reduces chunks chunks with n workers (window 8, timer 10 ms) through hubWith's
// links and returns each rank's statistics.
func runTimed(t *testing.T, n, chunks int, l links) []worker.StatsSnapshot {
	t.Helper()
	return runWindow(t, n, chunks, 8, l)
}

// runWindow is runTimed with window slots (the congestion window starts at 8).
func runWindow(t *testing.T, n, chunks, window int, l links) []worker.StatsSnapshot {
	t.Helper()
	return runTuned(t, n, chunks, window, l, func(*worker.Config) {})
}

// runTuned is runWindow with each rank's configuration passed through tune first.
func runTuned(t *testing.T, n, chunks, window int, l links, tune func(*worker.Config)) []worker.StatsSnapshot {
	t.Helper()
	ends := hubWith(t, n, l)
	var wg sync.WaitGroup
	stats := make([]worker.StatsSnapshot, n)
	for r := range n {
		cfg := config(r, n)
		cfg.Window, cfg.ProgressTimeout, cfg.RTO, cfg.MinRTO = window, 10*time.Second, 10*time.Millisecond, 10*time.Millisecond
		tune(&cfg)
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
	return stats
}

// The congestion window bounds the chunks in flight, not the span from the oldest unfinished one:
// with 16 slots, when rank 0's chunk 5 and its fast retransmission are both lost, the halved
// window still lets new chunks out, their results overtake the retransmission and a second fast
// retransmission repairs it. Bounding the span too held the worker at chunk 5 + 4 with nothing
// new out, until the timer.
func TestLostRetransmissionRepairedWithoutTheTimer(t *testing.T) {
	const lost = 5
	var mu sync.Mutex
	dropped := 0
	s := runWindow(t, 2, 64, 16, links{toPS: func(rank int, f *wire.Frame) bool {
		mu.Lock()
		defer mu.Unlock()
		if rank == 0 && f.INA.Seq == lost && dropped < 2 {
			dropped++
			return false
		}
		return true
	}})[0]
	if s.FastResent < 2 || s.Resent != s.FastResent {
		t.Errorf("rank 0 resent %d (%d fast): want two fast retransmissions and none by the timer", s.Resent, s.FastResent)
	}
}

// A stall (here the PS stops for 40 ms, then its results resume in order) against a 10 ms timer:
// only the oldest chunk in flight is resent at each expiry, the probe, and the others' timers
// restart (RFC 6298 5.4). Resending every expired chunk sent all 8 of the window twice (16 per
// worker), each flushing a partial sum that the PS answers to every worker.
func TestTimerProbesWithTheOldestChunkInAStall(t *testing.T) {
	for r, s := range runTimed(t, 2, 32, stallPS(16, 40*time.Millisecond)) {
		if s.Resent == 0 || s.Resent > 3 {
			t.Errorf("rank %d resent %d chunks in a 40 ms stall with a 10 ms timer: want a probe or two", r, s.Resent)
		}
	}
}

// A whole window lost at once (rank 0's first transmissions of chunks 16 to 23): nothing completes,
// the timer expires in a silence, the oldest chunk is the probe and the others are held. Once the
// probe is answered, each held chunk is resent at its next expiry, without waiting for results in
// between: every chunk of the window is held once. Restarting them with the backed-off timer, as
// before, held them again at every expiry and recovered one per expiry (25 holds here; at 5% loss
// in make bench's tail loop, p99 1.3 s against 0.85 s now).
func TestHeldChunksResentOnceTheProbeIsAnswered(t *testing.T) {
	const n, chunks, from, window = 2, 48, 16, 8
	var mu sync.Mutex
	dropped := map[uint32]bool{}
	stats := runTimed(t, n, chunks, links{toPS: func(rank int, f *wire.Frame) bool {
		mu.Lock()
		defer mu.Unlock()
		if s := f.INA.Seq; rank == 0 && s >= from && s < from+window && !dropped[s] {
			dropped[s] = true
			return false
		}
		return true
	}})
	for r, s := range stats {
		if s.TimerHeld > window-1 {
			t.Errorf("rank %d held expired chunks %d times for one lost window of %d: held again after the probe's answer", r, s.TimerHeld, window)
		}
		if r == 0 && s.Resent < window || s.Resent > 2*window {
			t.Errorf("rank %d resent %d chunks for %d lost ones (rank 0's)", r, s.Resent, window)
		}
	}
}

// After a stall, chunks sent before the timer expired complete on their first transmission: the
// expiry was spurious and its window cut is undone (as Eifel, RFC 3522/4015). With 16 slots the
// window grows from 8 to about 14 over the 64 chunks before the stall; the cut takes it to the
// floor of 8, and without the undo it grew back to about 11 over the 32 chunks left here. The cut
// is often the probe's, whose expiry backs nothing off (a result came after it was sent); the
// backoff comes at the next expiry, and the window to restore is still the one before the cut.
func TestSpuriousTimeoutUndoesTheCut(t *testing.T) {
	for r, s := range runWindow(t, 2, 96, 16, stallPS(64, 40*time.Millisecond)) {
		if s.WindowCuts == 0 || s.SpuriousTimeouts == 0 || s.Window < 14 {
			t.Errorf("rank %d: %d cuts, %d found spurious, window %.2f at the end: want the cut undone, window at least 14",
				r, s.WindowCuts, s.SpuriousTimeouts, s.Window)
		}
	}
}

// stallPS stops the PS for d when it sends its first result for seq from: everything after it
// waits too, as when the PS or the switch is descheduled.
func stallPS(from uint32, d time.Duration) links {
	var once sync.Once
	return links{fromPS: func(f *wire.Frame) time.Duration {
		if f.INA.Seq == from {
			once.Do(func() { time.Sleep(d) })
		}
		return 0
	}}
}

// A stall says nothing of the round trip: the chunks out through it complete in a burst when it
// ends, each after the stall's length. Taken as samples they lifted the estimate past the stall
// (to 260 ms after this 100 ms one, round trips being far under a millisecond), and in a job a
// stalled peer is a stall for every other worker, whose lost chunks then waited that timer. Chunks
// sent before the timer's last backoff give no sample: the estimate stays at the 10 ms minimum.
func TestStallGivesNoRTTSample(t *testing.T) {
	const chunks = 32
	for r, s := range runTimed(t, 2, chunks, stallPS(chunks-4, 100*time.Millisecond)) {
		if s.RTO > 30*time.Millisecond {
			t.Errorf("rank %d: estimate %v after a 100 ms stall, with round trips far under the 10 ms minimum", r, s.RTO)
		}
	}
}

// Under steady random loss the window is cut about once a round trip and sits at its floor, 12
// chunks or half the slots, a quarter of them from 128 slots (here rank 0 loses every fifth chunk's
// first transmission); the floor sets the speed of make bench's tail loop at 5% loss (minWindow).
func TestWindowFloorUnderRandomLoss(t *testing.T) {
	// The window starts at 8 and grows by 1/window per result: 128 slots take longer to reach 32.
	for _, tc := range []struct{ slots, floor, chunks int }{{16, 8, 320}, {64, 12, 320}, {128, 32, 1600}} {
		s := runWindow(t, 2, tc.chunks, tc.slots, everyNthLost(5))[0]
		if s.WindowCuts < 4 || s.Window < float64(tc.floor) || s.Window > float64(tc.floor)+2 {
			t.Errorf("%d slots, rank 0: %d cuts, window %.2f at the end: want several cuts and the window at its floor of %d",
				tc.slots, s.WindowCuts, s.Window, tc.floor)
		}
	}
}

// A cut never raises the window to the floor: it starts at 8 chunks, below the floor of 12 that
// 64 slots have, and grows by an eighth of a chunk or less per result, so 24 results leave it
// below 12 whatever the cuts did; raised to the floor by a cut, it never went below 12 again.
func TestCutNeverRaisesTheWindow(t *testing.T) {
	s := runWindow(t, 2, 24, 64, everyNthLost(2))[0]
	if s.WindowCuts == 0 || s.Window >= 12 {
		t.Errorf("rank 0: %d cuts, window %.2f after 24 chunks from 8, half of them lost: want a cut and the window below 12",
			s.WindowCuts, s.Window)
	}
}

// Sparse random loss, below randomLoss of the window (rank 0 loses every 25th chunk, 4%), is
// repaired by fast retransmission without a cut, and the window stays above its floor: halving
// for it held make bench's tail loop at its floor at 1% loss on every port. The window stays below
// the span, so that chunks sent after a retransmission can overtake it.
func TestSparseLossRepairedWithoutACut(t *testing.T) {
	s := runWindow(t, 2, 400, 16, everyNthLost(25))[0]
	if s.WindowCuts != 0 || s.FastResent < 10 || s.Resent != s.FastResent || s.Window <= 8 || s.Window >= 16 {
		t.Errorf("rank 0: %d cuts, %d resent (%d fast), window %.2f at the end of 16 slots: want no cut, every loss resent fast, the window between 8 and 16",
			s.WindowCuts, s.Resent, s.FastResent, s.Window)
	}
}

// A job of 8 slots still halves its window under loss: the floor is at most half the slots. A floor
// of 8 left such a job (make validate's) with no congestion response at all.
func TestSmallWindowStillHalves(t *testing.T) {
	s := runTimed(t, 2, 160, everyNthLost(5))[0]
	if s.WindowCuts < 4 || s.Window >= 8 {
		t.Errorf("rank 0: %d cuts, window %.2f at the end of 8 slots: want several cuts and the window below 8", s.WindowCuts, s.Window)
	}
}

// everyNthLost loses the first transmission of every nth chunk rank 0 sends.
func everyNthLost(n uint32) links {
	var mu sync.Mutex
	dropped := map[uint32]bool{}
	return links{toPS: func(rank int, f *wire.Frame) bool {
		mu.Lock()
		defer mu.Unlock()
		if q := f.INA.Seq; rank == 0 && q%n == 0 && !dropped[q] {
			dropped[q] = true
			return false
		}
		return true
	}}
}
