package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
)

// K is the number of values per packet (one chunk).
const K = wire.NumValues

// Worker runs all-reduce calls for one member of one job. Calls must not overlap.
type Worker struct {
	cfg       Config
	t         transport.Transport
	batch     transport.Batcher  // t, when it can batch sends
	queue     func([]byte) error // t.Send, or batch.Queue (sent at the next flush)
	nextSeq   uint32             // seq of the first chunk of the next call
	stamp     uint64             // transmissions so far, to order them
	cwnd      float64
	cwndMilli atomic.Int64 // cwnd*1000 for Snapshot
	recover   uint32       // window cuts are at most one per window: none until a result newer than this
	lossRound uint32       // the seq that ends the current round of fast retransmissions (lossy)
	losses    int          // fast retransmissions in the current round
	srtt      time.Duration
	rttvar    time.Duration
	rto       time.Duration // the estimate (RFC 6298 2), never backed off itself
	rtoNanos  atomic.Int64  // rto for Snapshot
	backoff   int           // timer backoffs since the last clean sample (RFC 6298 5.5), up to maxBackoff
	backedOff uint64        // w.stamp when the timer last backed off: transmissions up to it came before
	undoCwnd  float64       // the window before a cut for a silent expiry, restored if the expiry proves spurious; 0: none
	failed    bool
	// A thread of a Group owns the seqs that are lane mod step, and span = Window/step of the window
	// (step 1, span Window for a Worker of its own).
	lane, step uint32
	stepShift  uint32 // step is 1<<stepShift (a Group's threads are a power of two)
	span       int
	// slotMask is Window-1 when Window is a power of two (every default and scheduler window):
	// a chunk's slot is then a mask, else a division (Config.slot).
	slotMask uint32
	slotPow2 bool
	stats    Stats
	// The job's frame headers, written once: a send writes only the chunk's fields and values.
	tmpl     *wire.Template
	ipID     uint16
	rxbuf    []byte
	rxHeader wire.Header
}

// New returns a worker sending and receiving on t.
func New(cfg Config, t transport.Transport) (*Worker, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, t: t, cwnd: float64(cfg.InitialWindow), rto: cfg.RTO,
		rxbuf: make([]byte, 2048), step: 1, span: cfg.Window}
	w.cwndMilli.Store(int64(w.cwnd * 1000))
	w.rtoNanos.Store(int64(w.rto))
	w.slotMask, w.slotPow2 = uint32(cfg.Window-1), cfg.Window&(cfg.Window-1) == 0
	w.batch, _ = t.(transport.Batcher)
	w.queue = t.Send
	if w.batch != nil {
		w.queue = w.batch.Queue
	}
	f := wire.Frame{
		Addr:    wire.Addr{SrcMAC: cfg.SrcMAC, DstMAC: cfg.DstMAC, SrcIP: cfg.SrcIP, DstIP: cfg.DstIP},
		TTL:     64,
		SrcPort: wire.UDPPort,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Priority: cfg.Priority, Member: cfg.Member,
			Job: cfg.Job, Bitmap: 1 << uint(cfg.Rank)},
	}
	w.tmpl = f.NewTemplate()
	return w, nil
}

// Config returns the worker's configuration with defaults filled in.
func (w *Worker) Config() Config { return w.cfg }

// AllReduceInt32 replaces data with the element-wise sum over all workers of the job. Sums are
// exact; a sum that does not fit in int32 is saturated and reported with an *OverflowError (after
// every other chunk has completed, so the peers are not left waiting).
func (w *Worker) AllReduceInt32(ctx context.Context, data []int32) error {
	return w.AllReduceMany(ctx, []Tensor{{Int32: data}})
}

// AllReduceFloat32 replaces data with the element-wise sum over all workers, aggregated in fixed
// point with the given scale (0 means DefaultScale; every worker must use the same one). The error
// of each result value is at most Workers*0.5/scale plus the float32 rounding of the result
// (2^-24 relative); a chunk whose fixed-point sum would not fit in int32 is summed by the PS from the
// float32 values instead (in float64, rounded once to float32). See README.md.
func (w *Worker) AllReduceFloat32(ctx context.Context, data []float32, scale float64) error {
	if data == nil {
		data = []float32{}
	}
	return w.AllReduceMany(ctx, []Tensor{{Float32: data, Scale: scale}})
}

// codec moves the chunks of one call between the caller's tensors and packet values.
type codec interface {
	numChunks() int
	// load fills v with chunk c as big-endian aggregatable int32 values, or as float32 bit
	// patterns if bypass: the values of a frame, written in place.
	load(c int, v *[4 * K]byte, bypass bool)
	// store writes a result's big-endian values into chunk c; float says they are float32 bit
	// patterns.
	store(c int, v *[4 * K]byte, float bool)
	// isFloat reports whether chunk c holds float32 values (sent with FLOAT on the exact path).
	isFloat(c int) bool
	// saturated lists the tensors holding saturated values after the given chunks overflowed.
	saturated(chunks []int) []int
}

// inflight is the state of one chunk in the window.
type inflight struct {
	sent      time.Time
	deadline  time.Time
	stamp     uint64 // transmission order of the last send
	tries     int    // retransmissions so far
	overtaken int    // chunks sent after this one that completed since its last send
	held      bool   // its timer expired in a silence and was restarted instead of resending it
	resume    bool   // held, and results have come since: resent at its next expiry, silence or not
	bypass    bool   // an OVERFLOW result moved it to the PS path
	done      bool
}

// ring is the window's per-chunk state, indexed by chunk number: a power of two at least the
// span long, so that the chunks of a span [lo, next) have distinct entries and an index is a mask,
// not a division (a chunk's send and result took five divisions by the span and the step, some
// 15% of the worker's own CPU per chunk).
type ring []inflight

func newRing(span int) ring { return make(ring, 1<<bits.Len(uint(span-1))) }

func (r ring) at(c int) *inflight { return &r[c&(len(r)-1)] }

// coarseTicks is how many passes of the call's loop (each takes a result, if one is waiting) share
// one reading of the clock while no pass waits.
const coarseTicks = 16

// fastRetransmitAfter is how many chunks sent after a chunk must complete before the chunk is
// taken as lost and resent without waiting for its timer. The switch's reordering holds a packet
// behind one other, so three are never reordering; on a machine where the retransmission timer
// has to allow for scheduling delays of many milliseconds, it turns a lost packet into a delay of
// about one round trip instead of the timer.
const fastRetransmitAfter = 3

func (w *Worker) run(ctx context.Context, cd codec) error {
	if w.failed {
		return ErrClosedWorker
	}
	all := cd.numChunks()
	if all == 0 {
		return nil
	}
	base := w.nextSeq
	// Whatever happens, the peers number the next call from here too.
	w.nextSeq += uint32(all)
	full, first := cd, uint32(0)
	if w.step > 1 {
		// One thread of a Group: its chunks are those whose seq is lane mod step, so it numbers
		// from the first of them and counts in steps.
		first = (w.lane + w.step - base%w.step) % w.step
		cd = newLaneCodec(full, int(first), int(w.step))
	}
	base += first
	chunks := cd.numChunks()
	if chunks == 0 {
		return nil
	}
	win := newRing(w.span)
	var overflowed []int
	lo, next := 0, 0
	// The congestion window bounds the chunks in flight (sent, no result yet), as TCP's pipe
	// does with SACK (RFC 6675); Window bounds the span [lo, next), which keeps the job's
	// chunks in flight on distinct slots. Bounding the span by the congestion window too stopped
	// the worker behind every lost chunk: halved, the window held nothing but the chunks already
	// out, so nothing new completed to trigger a fast retransmission of a lost retransmission,
	// and the timer had to (at 1% loss, 4 workers, 1 MiB calls: most of the call's time).
	pipe := 0
	hi := -1 // the latest chunk of the call that completed
	// The clock is read after every wait for a result and every coarseTicks results taken
	// without one, not per chunk: a burst of results (a ring's worth) shares one reading, which
	// is late by at most that burst's processing, microseconds against timers of milliseconds.
	now := time.Now()
	lastProgress := now
	// The transmissions before the last result, for ordering: the coarse clock may give a send and
	// a result the same reading.
	lastResultStamp := w.stamp
	nextCheck := time.Time{}
	ticks := 0
	// fresh: now was read since the last result. Until then now is lastProgress, and the checks
	// of the time since progress (two a chunk, a fifth of the loop's own time) cannot pass.
	fresh := false
	for lo < chunks {
		if err := ctx.Err(); err != nil {
			w.failed = true
			return err
		}
		if ticks++; ticks >= coarseTicks {
			now, ticks, fresh = time.Now(), 0, true
		}
		for next < chunks && next-lo < w.span && pipe < max(1, int(w.cwnd)) {
			st := win.at(next)
			*st = inflight{}
			if err := w.send(base, next, st, cd, 0, now); err != nil {
				w.failed = true
				return err
			}
			w.stats.DataSent.Add(1)
			pipe++
			if nextCheck.IsZero() || st.deadline.Before(nextCheck) {
				nextCheck = st.deadline
			}
			next++
		}
		if fresh && now.Sub(lastProgress) > w.cfg.ProgressTimeout {
			w.failed = true
			return fmt.Errorf("%w: job %d rank %d: no result for chunk seq %d (call chunks %d..%d, %d done) in %v after %d retransmissions; a peer worker, the PS or the switch is not responding",
				ErrNoProgress, w.cfg.Job, w.cfg.Rank, base+w.step*uint32(lo), base, base+w.step*uint32(chunks)-1, lo, w.cfg.ProgressTimeout, win.at(lo).tries)
		}
		if !now.Before(nextCheck) {
			var err error
			if nextCheck, err = w.retransmit(base, lo, next, hi, win, cd, now, lastProgress, lastResultStamp); err != nil {
				w.failed = true
				return err
			}
		}
		// Results that arrived together are all taken before the chunks they free go out: the
		// queued sends leave in one system call when no result is waiting (a flush per result
		// cost a system call per chunk, and on a machine with fewer cores than busy processes
		// the CPU is what bounds the job).
		k, err := w.t.Recv(w.rxbuf, now)
		if errors.Is(err, transport.ErrTimeout) {
			if err := w.flush(); err != nil {
				w.failed = true
				return err
			}
			deadline := nextCheck
			if lim := now.Add(50 * time.Millisecond); deadline.After(lim) {
				deadline = lim // wake up for ctx and the progress timeout
			}
			k, err = w.t.Recv(w.rxbuf, deadline)
			// Recv may have waited: RTT samples and progress need the arrival time.
			now, ticks, fresh = time.Now(), 0, true
		}
		if errors.Is(err, transport.ErrTimeout) {
			continue
		}
		if err != nil {
			w.failed = true
			return fmt.Errorf("worker: job %d rank %d: receive: %w", w.cfg.Job, w.cfg.Rank, err)
		}
		h := &w.rxHeader // reused: the codec (an interface) would make a local escape
		vals, err := h.UnmarshalFrameView(w.rxbuf[:k])
		if err != nil || h.Type != wire.TypeResult || h.Job != w.cfg.Job {
			w.stats.RxErrors.Add(1)
			continue
		}
		v := (*[4 * K]byte)(vals)
		off := h.Seq - base // this thread's chunks are step seqs apart
		c := int(off >> w.stepShift)
		if off&(w.step-1) != 0 || off>>w.stepShift >= uint32(chunks) || c < lo || c >= next || win.at(c).done {
			w.stats.ResultsIgnored.Add(1)
			continue
		}
		st := win.at(c)
		if !w.cfg.NoIntegrity && !wire.IntegrityOK(v) {
			// Corrupted on its way here: never delivered. The PS keeps the result it verified
			// and answers a RESEND with it; the timer covers a RESEND that is lost or corrupted.
			w.stats.Corrupt.Add(1)
			st.tries++
			if err := w.send(base, c, st, cd, wire.FlagResend, now); err != nil {
				w.failed = true
				return err
			}
			w.stats.Resent.Add(1)
			continue
		}
		if h.Flags&wire.FlagECN != 0 {
			w.stats.ECN.Add(1)
			w.cut(h.Seq, base+w.step*uint32(next))
		} else {
			w.cwnd = min(w.cwnd+1/w.cwnd, float64(w.span))
			w.cwndMilli.Store(int64(w.cwnd * 1000))
		}
		bypassResult := h.Flags&wire.FlagBypass != 0
		switch {
		case h.Flags&(wire.FlagOverflow|wire.FlagCorrupt) != 0 && !bypassResult:
			// The fixed-point sum clipped, or a packet of the chunk failed the PS's integrity
			// check: resend this chunk on the PS's exact path.
			if st.bypass {
				w.stats.ResultsIgnored.Add(1)
				continue
			}
			if h.Flags&wire.FlagCorrupt != 0 {
				w.stats.CorruptRedirects.Add(1)
			} else {
				w.stats.Overflows.Add(1)
			}
			st.bypass, st.tries = true, 0
			if err := w.send(base, c, st, cd, wire.FlagBypass, now); err != nil {
				w.failed = true
				return err
			}
			w.stats.BypassSent.Add(1)
			if st.deadline.Before(nextCheck) {
				nextCheck = st.deadline
			}
			continue
		case bypassResult != st.bypass:
			w.stats.ResultsIgnored.Add(1)
			continue
		}
		if st.tries == 0 && !st.bypass {
			if w.undoCwnd > 0 && st.stamp <= w.backedOff {
				// A chunk sent before the silent expiry completed on its first transmission: the
				// delay jumped, nothing was lost, and the cut is undone (as Eifel, RFC 3522/4015).
				w.cwnd, w.undoCwnd = max(w.cwnd, w.undoCwnd), 0
				w.cwndMilli.Store(int64(w.cwnd * 1000))
				w.stats.SpuriousTimeouts.Add(1)
			}
			if st.stamp > w.backedOff {
				// A chunk out through the expiry's silence completes after the stall, however short
				// the round trip: a sample from it lifted the estimate past the stall, and a stalled
				// peer is a stall for every other worker. The backoff stays until a chunk sent
				// after it completes.
				w.sampleRTT(now.Sub(st.sent))
			}
		}
		if err := w.fastRetransmit(base, lo, c, next, win, st.stamp, cd, now); err != nil {
			w.failed = true
			return err
		}
		cd.store(c, v, h.Flags&wire.FlagFloat != 0)
		if bypassResult && h.Flags&wire.FlagOverflow != 0 && h.Flags&wire.FlagFloat == 0 {
			overflowed = append(overflowed, int(first+w.step*uint32(c))) // the call's chunk index
		}
		st.done = true
		hi = max(hi, c)
		pipe--
		w.stats.Results.Add(1)
		if fresh && now.Sub(lastProgress) >= w.rto/2 {
			// The first result after a silence: the chunks still out get a full timeout from
			// now (RFC 6298 5.3 restarts its timer on every new acknowledgement), or the ones held
			// in the silence expire amid the results right behind this one.
			nextCheck = w.restartTimers(lo, next, win, now)
		}
		lastProgress, lastResultStamp, fresh = now, w.stamp, false
		for lo < next && win.at(lo).done {
			lo++
		}
	}
	if len(overflowed) > 0 {
		return &OverflowError{Job: w.cfg.Job, Chunks: overflowed, Tensors: full.saturated(overflowed)}
	}
	return nil
}

// send transmits chunk c (seq base+step*c); extra is BYPASS for the PS path and RESEND for a retry.
func (w *Worker) send(base uint32, c int, st *inflight, cd codec, extra wire.Flags, now time.Time) error {
	seq := base + w.step*uint32(c)
	flags := extra
	if st.bypass {
		flags |= wire.FlagBypass
		if cd.isFloat(c) {
			flags |= wire.FlagFloat
		}
	}
	// The values are converted straight into the frame, and the integrity lane summed there.
	v := w.tmpl.Values()
	cd.load(c, v, st.bypass)
	if !w.cfg.NoIntegrity {
		wire.SetIntegrity(v)
	}
	w.ipID++
	if err := w.queue(w.tmpl.Stamp(w.ipID, flags, w.slot(seq), seq)); err != nil {
		return fmt.Errorf("worker: job %d rank %d: send: %w", w.cfg.Job, w.cfg.Rank, err)
	}
	st.sent = now
	w.stamp++
	st.stamp, st.overtaken, st.held, st.resume = w.stamp, 0, false, false
	st.deadline = now.Add(w.timeout(st))
	return nil
}

// slot is Config.slot without the division when Window is a power of two.
func (w *Worker) slot(seq uint32) uint16 {
	if w.slotPow2 {
		return w.cfg.SlotBase + uint16(seq&w.slotMask)
	}
	return w.cfg.slot(seq)
}

// maxBackoff bounds the timer's doublings (MaxRTO bounds the result too).
const maxBackoff = 6

// timeout is chunk st's timer: the estimate doubled once per retransmission of the chunk or per
// expiry of the timer since the last clean sample, whichever is more (RFC 6298 5.5 backs off the
// one timer; a chunk's own retries back off that chunk). One exponent, not their sum: under
// random loss a chunk retried k times after k expiries would otherwise wait 4^k times the
// estimate (10 ms grew to the 1 s cap in four steps; train-demo's 5% loss run went 6x slower).
func (w *Worker) timeout(st *inflight) time.Duration { return w.doubled(max(st.tries, w.backoff)) }

// doubled is the estimate doubled k times (at most maxBackoff), capped at MaxRTO.
func (w *Worker) doubled(k int) time.Duration { return min(w.rto<<min(k, maxBackoff), w.cfg.MaxRTO) }

// fastRetransmit counts chunk c's completion against every unfinished chunk in [lo, c) sent
// before it (stamp), and resends with RESEND those it has now overtaken fastRetransmitAfter times.
func (w *Worker) fastRetransmit(base uint32, lo, c, next int, win ring, stamp uint64, cd codec, now time.Time) error {
	for j := lo; j < c; j++ {
		st := win.at(j)
		if st.done || st.stamp > stamp {
			continue
		}
		if st.overtaken++; st.overtaken != fastRetransmitAfter {
			continue
		}
		w.lossy(base+w.step*uint32(j), base+w.step*uint32(next))
		st.tries++
		if err := w.send(base, j, st, cd, wire.FlagResend, now); err != nil {
			return err
		}
		w.stats.Resent.Add(1)
		w.stats.FastResent.Add(1)
	}
	return nil
}

// flush transmits the frames a batching transport holds.
func (w *Worker) flush() error {
	if w.batch == nil {
		return nil
	}
	if err := w.batch.Flush(); err != nil {
		return fmt.Errorf("worker: job %d rank %d: send: %w", w.cfg.Job, w.cfg.Rank, err)
	}
	return nil
}

// retransmit resends every chunk in [lo, next) whose timer expired, with RESEND unless no chunk
// after it completed (hi is the latest that did), and returns when the next timer fires.
// lastResult is when the last result arrived, and resultStamp the transmissions before it.
func (w *Worker) retransmit(base uint32, lo, next, hi int, win ring, cd codec, now, lastResult time.Time, resultStamp uint64) (time.Time, error) {
	var earliest time.Time
	cut, backoff, lost := false, false, false
	before, undo := w.cwnd, w.undoCwnd
	// A silence: no result for half the estimate, far longer than results are apart while the
	// path works (a round trip over the window).
	silence := now.Sub(lastResult) >= w.rto/2
	for c := lo; c < next; c++ {
		st := win.at(c)
		if st.done {
			continue
		}
		if !now.Before(st.deadline) {
			// Back off only when no result at all arrived since the chunk was sent: the delay
			// jumped, or the tail of a call was lost. While others' results keep arriving the
			// chunk was lost, not late, and a longer timer would only wait longer for it (5%
			// loss: twice the all-reduce time). Every chunk has its own timer: only one sent
			// since the last backoff backs off again, as RFC 6298's one timer would.
			backoff = backoff || (st.stamp > w.backedOff && resultStamp < st.stamp)
			if silence && c != lo && !st.resume {
				// RFC 6298 5.4: in a silence only the oldest chunk is resent (the probe); the
				// others' timers restart. The path is stalled, not lossy: resending every chunk in
				// flight (after a scheduling stall, the window of 64 on each of 4 workers) flushed
				// as many partial sums, each answered by the PS to every worker, and kept the path
				// busy long enough for the next expiry. A held chunk that was lost is resent at its
				// first expiry after the probe's answer (restartTimers).
				w.stats.TimerHeld.Add(1)
				st.held = true
				st.deadline = now.Add(w.timeout(st))
				if earliest.IsZero() || st.deadline.Before(earliest) {
					earliest = st.deadline
				}
				continue
			}
			if !cut {
				w.cut(base+w.step*uint32(c), base+w.step*uint32(next))
				cut = true
			}
			lost = lost || !silence
			// A chunk after the latest one that completed may not have left every peer yet (a
			// peer with a smaller window, or one that starts the call later): a RESEND would
			// flush the slot's partial sum, and the peer's packet would then claim the slot alone
			// and wait for its own timer. Its first retry is sent plain: the switch drops it as a
			// duplicate if the slot has this worker's data, adds it if it was lost. A plain retry
			// cannot fetch a lost result, so the next one is a RESEND.
			flag := wire.FlagResend
			if st.tries == 0 && c > hi {
				flag = 0
				w.stats.PlainResent.Add(1)
			}
			st.tries++
			if err := w.send(base, c, st, cd, flag, now); err != nil {
				return earliest, err
			}
			w.stats.Resent.Add(1)
		}
		if earliest.IsZero() || st.deadline.Before(earliest) {
			earliest = st.deadline
		}
	}
	if (cut || backoff) && !lost {
		// Undone if a chunk sent before the silence's backoff completes on its first
		// transmission; the window to restore is the one before the silence's first cut. The
		// probe's own expiry often backs nothing off (a result came after it was sent), and the
		// backoff comes at the next expiry: the cut is the probe's.
		w.undoCwnd = cmp.Or(undo, before)
	}
	if backoff {
		// RFC 6298 5.5: back off the timer, and keep it backed off until a chunk completes
		// without a retransmission (sampleRTT). Without it, after a jump in delay (a queue, a
		// descheduled peer or switch) every chunk in flight expires in turn, each a spurious
		// RESEND that the PS answers to every worker of the job, and the estimate, fed only by
		// chunks that were not retransmitted (Karn), never catches up with the new delay. The
		// chunks still in flight wait for the backed-off timer too.
		w.backoff, w.backedOff = min(w.backoff+1, maxBackoff), w.stamp
		w.stats.TimerBackoffs.Add(1)
		earliest = time.Time{}
		out := 0
		for c := lo; c < next; c++ {
			st := win.at(c)
			if st.done {
				continue
			}
			out++
			if d := st.sent.Add(w.timeout(st)); d.After(st.deadline) {
				st.deadline = d
			}
			if earliest.IsZero() || st.deadline.Before(earliest) {
				earliest = st.deadline
			}
		}
		if w.cfg.Trace != nil {
			w.cfg.Trace.Info("timer backoff", "job", w.cfg.Job, "rank", w.cfg.Rank, "backoff", w.backoff,
				"seq", base+w.step*uint32(lo), "tries", win.at(lo).tries, "out", out,
				"silence_ms", float64(now.Sub(lastResult).Microseconds())/1000, "cwnd", math.Round(w.cwnd*100)/100)
		}
	}
	if earliest.IsZero() {
		earliest = now.Add(w.doubled(w.backoff))
	}
	return earliest, nil
}

// restartTimers, on the first result after a silence, gives every chunk in [lo, next) still out
// at least a full timeout from now, and returns when the next timer fires. A chunk held in the
// silence is different: its timer already expired once, and the path has now answered, so its
// result is either right behind this one (a stall: results resume in a burst) or lost. It gets the
// estimate without the silence's backoff (its own retries still double it), and at that expiry it
// is resent even if no result came in between: the probe has shown the path works (as F-RTO,
// RFC 5682, goes on to retransmit what the probe's answer did not cover). Restarting it with the
// backed-off timer recovered one held chunk per expiry: at 5% loss, when a whole window of
// results was lost, a chunk a second for 30 seconds.
func (w *Worker) restartTimers(lo, next int, win ring, now time.Time) time.Time {
	var earliest time.Time
	for c := lo; c < next; c++ {
		st := win.at(c)
		if st.done {
			continue
		}
		if st.held {
			st.resume = true
			st.deadline = now.Add(w.doubled(st.tries))
		} else if d := now.Add(w.timeout(st)); d.After(st.deadline) {
			st.deadline = d
		}
		if earliest.IsZero() || st.deadline.Before(earliest) {
			earliest = st.deadline
		}
	}
	if earliest.IsZero() {
		earliest = now.Add(w.timeout(&inflight{}))
	}
	return earliest
}

// randomLoss is the share of a round's chunks that may be lost, found by fast retransmission,
// before the losses count as congestion: one in eight. A member of an aggregating job sees every
// loss on the job's paths, not only its own (at 1% loss on every switch port, 4 workers, 2.2% of
// a worker's chunks; at 5%, 12%), so halving for each round with a loss held the window at its
// floor at 1% and made each chunk cost more CPU (fewer results arrive together); as BBR v2 counts
// loss as congestion only above a rate, sparse losses are repaired without a cut. Congestion
// still cuts: ECN, a timeout, and losses above the rate.
const randomLoss = 1.0 / 8

// lossy takes a fast retransmission of seq: a cut if the round's losses exceed randomLoss of the
// window, else at most a quarter of the span left free, so that chunks sent after the
// retransmission can overtake it and find it lost again (with the window at the span, a lost
// retransmission of the oldest chunk held the whole span until the timer).
func (w *Worker) lossy(seq, nextSeq uint32) {
	if int32(seq-w.lossRound) >= 0 {
		w.lossRound, w.losses = nextSeq, 0
	}
	w.losses++
	if float64(w.losses) > randomLoss*w.cwnd {
		w.cut(seq, nextSeq)
		return
	}
	if room := max(minWindow(w.span), 0.75*float64(w.span)); w.cwnd > room {
		w.cwnd = room
		w.cwndMilli.Store(int64(w.cwnd * 1000))
	}
}

// cut halves the window, at most once per window of data: a cut caused by seq only counts if seq
// was sent after the previous cut (serial-number comparison).
func (w *Worker) cut(seq, nextSeq uint32) {
	if w.stats.WindowCuts.Load() > 0 && int32(seq-w.recover) < 0 {
		return
	}
	w.recover, w.undoCwnd = nextSeq, 0
	// Halved, not below the floor, and never raised to it: InitialWindow (8) is under a floor of 12.
	w.cwnd = max(min(w.cwnd, minWindow(w.span)), w.cwnd/2)
	w.cwndMilli.Store(int64(w.cwnd * 1000))
	w.stats.WindowCuts.Add(1)
}

// sampleRTT updates the RTO from a chunk that was not retransmitted (Karn), as in RFC 6298.
func (w *Worker) sampleRTT(r time.Duration) {
	if w.srtt == 0 {
		w.srtt, w.rttvar = r, r/2
	} else {
		d := w.srtt - r
		if d < 0 {
			d = -d
		}
		w.rttvar = (3*w.rttvar + d) / 4
		w.srtt = (7*w.srtt + r) / 8
	}
	w.rto = min(max(w.srtt+4*w.rttvar, w.cfg.MinRTO), w.cfg.MaxRTO)
	w.rtoNanos.Store(int64(w.rto))
	w.backoff = 0
}

// minWindow is the floor of the congestion window: 12 chunks, 3.8 KB on the wire, about the two
// full-sized segments TCP keeps after a loss (RFC 5681's ssthresh), and more than
// fastRetransmitAfter, so that a loss is caught by later completions rather than by the timer;
// but at most half the job's slots, so that every window can still halve on ECN (a floor of 8 left
// a job of 8 slots no congestion response at all). Under random loss the window is cut about once a
// round trip whatever its size, so it sits at the floor, and the floor sets the speed. A larger
// floor sends more of the span before a lost chunk's retransmission returns, and when that is lost
// too nothing is left to overtake it: the span has to hold several windows at the floor (the best
// measured were five of 12 in 64 slots and four of 32 in 128). So 12 beat 8, 16 and 24 with 64
// slots, and from 128 slots a quarter of them is the floor (more slots with the floor left at 12
// were no faster). worker/README.md, "Window and AIMD", has the runs.
func minWindow(window int) float64 {
	if window >= 128 {
		return float64(window / 4)
	}
	return float64(min(12, max(1, window/2)))
}
