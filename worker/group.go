package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"

	"github.com/inapack/inapack/transport"
)

// Group is one member of a job on several threads, each with its own transport (a ring pair):
// thread k sends and receives the chunks whose seq is k mod Threads. With Window a multiple of
// Threads those chunks map to the slots SlotBase+i with i = k mod Threads, so the threads own
// disjoint slots, and each keeps at most Window/Threads of them in flight: every thread keeps
// the single worker's rule (a seq span under Window/Threads of its own chunks, under Window in
// seqs), and the job never collides with itself. Each thread has its own congestion window and
// retransmission timer. The peers need not run as many threads: the wire carries the same
// chunks with the same seqs and slots either way.
type Group struct {
	ws   []*Worker
	reqs []chan groupCall
	done chan groupDone
}

type groupCall struct {
	ctx context.Context
	cd  codec
}

type groupDone struct {
	thread int
	err    error
}

// NewGroup returns a member of cfg's job running on len(ts) threads, thread k on ts[k]: a power
// of two, and cfg.Window a multiple of it; cfg.InitialWindow is per thread. Close stops the
// threads (not the transports).
func NewGroup(cfg Config, ts []transport.Transport) (*Group, error) {
	n := len(ts)
	// A power of two divides 2^32: a seq's thread (seq mod Threads, as a socket's filter reads it)
	// stays the one that steps to it when seqs wrap.
	if n < 1 || n > MaxThreads || n&(n-1) != 0 || cfg.Window%n != 0 {
		return nil, fmt.Errorf("%w: %d threads for a window of %d: want a power of two up to %d dividing the window", ErrConfig, n, cfg.Window, MaxThreads)
	}
	g := &Group{done: make(chan groupDone, n)}
	for k, t := range ts {
		c := cfg
		c.InitialWindow = min(cmp.Or(max(cfg.InitialWindow, 0), 8), cfg.Window/n)
		w, err := New(c, t)
		if err != nil {
			return nil, err
		}
		w.lane, w.step, w.stepShift, w.span = uint32(k), uint32(n), uint32(bits.TrailingZeros(uint(n))), cfg.Window/n
		g.ws = append(g.ws, w)
		g.reqs = append(g.reqs, make(chan groupCall))
		go g.thread(k)
	}
	return g, nil
}

// MaxThreads bounds a Group's threads.
const MaxThreads = 64

// AutoThreads is the threads a worker runs on when none are asked for: transport.AutoLanes of
// the cores Go may use (GOMAXPROCS, which follows a container's CPU limit), halved until it
// divides window.
func AutoThreads(window int) int {
	n := transport.AutoLanes(runtime.GOMAXPROCS(0))
	for n > 1 && window%n != 0 {
		n /= 2
	}
	return n
}

// thread runs thread k's share of every call. It is not locked to an OS thread: a locked
// goroutine that waits on its socket hands its core to another OS thread and has to be switched
// back when a frame comes (over AF_PACKET on veths that cost a third more CPU per chunk).
func (g *Group) thread(k int) {
	for c := range g.reqs[k] {
		g.done <- groupDone{k, g.ws[k].run(c.ctx, c.cd)}
	}
}

// Threads is the number of threads.
func (g *Group) Threads() int { return len(g.ws) }

// Close stops the threads; the group is unusable afterwards. It must not overlap a call.
func (g *Group) Close() {
	for _, r := range g.reqs {
		close(r)
	}
}

// AllReduceMany is Worker.AllReduceMany on the group's threads.
func (g *Group) AllReduceMany(ctx context.Context, ts []Tensor) error {
	cd, err := newManyCodec(ts, g.ws[0].cfg.width())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for k := range g.ws {
		g.reqs[k] <- groupCall{ctx, cd}
	}
	var first error
	var over []int
	for range g.ws {
		d := <-g.done
		var oe *OverflowError
		switch {
		case errors.As(d.err, &oe):
			over = append(over, oe.Chunks...)
		case d.err != nil && first == nil:
			// The peers are the same for every thread: a thread that cannot go on means the
			// others will not either, so they stop now rather than at their own timeouts.
			first = d.err
			cancel()
		}
	}
	if first != nil {
		return first
	}
	if len(over) > 0 {
		slices.Sort(over)
		return &OverflowError{Job: g.ws[0].cfg.Job, Chunks: over, Tensors: cd.saturated(over)}
	}
	return nil
}

// AllReduceFloat32 is Worker.AllReduceFloat32 on the group's threads.
func (g *Group) AllReduceFloat32(ctx context.Context, data []float32, scale float64) error {
	if data == nil {
		data = []float32{}
	}
	return g.AllReduceMany(ctx, []Tensor{{Float32: data, Scale: scale}})
}

// AllReduceInt32 is Worker.AllReduceInt32 on the group's threads.
func (g *Group) AllReduceInt32(ctx context.Context, data []int32) error {
	return g.AllReduceMany(ctx, []Tensor{{Int32: data}})
}

// AllReduceFloat32Scaled is Worker.AllReduceFloat32Scaled on the group's threads.
func (g *Group) AllReduceFloat32Scaled(ctx context.Context, data []float32, bucket int) error {
	return g.AllReduceManyScaled(ctx, []Tensor{{Float32: data}}, bucket)
}

// AllReduceManyScaled is Worker.AllReduceManyScaled on the group's threads.
func (g *Group) AllReduceManyScaled(ctx context.Context, ts []Tensor, bucket int) error {
	return allReduceManyScaled(ctx, g, &g.ws[0].cfg, ts, bucket)
}

// ChunkValues is Worker.ChunkValues.
func (g *Group) ChunkValues() int { return g.ws[0].ChunkValues() }

// Snapshot sums the threads' counters; Window is the sum of their windows and RTO the largest.
func (g *Group) Snapshot() StatsSnapshot {
	var s StatsSnapshot
	for _, w := range g.ws {
		t := w.Snapshot()
		s.DataSent += t.DataSent
		s.Resent += t.Resent
		s.BypassSent += t.BypassSent
		s.FastResent += t.FastResent
		s.PlainResent += t.PlainResent
		s.Results += t.Results
		s.ResultsIgnored += t.ResultsIgnored
		s.Overflows += t.Overflows
		s.ECN += t.ECN
		s.WindowCuts += t.WindowCuts
		s.Corrupt += t.Corrupt
		s.CorruptRedirects += t.CorruptRedirects
		s.TimerBackoffs += t.TimerBackoffs
		s.SpuriousTimeouts += t.SpuriousTimeouts
		s.TimerHeld += t.TimerHeld
		s.RxErrors += t.RxErrors
		s.Window += t.Window
		s.RTO = max(s.RTO, t.RTO)
	}
	return s
}

// laneCodec is one thread's view of a call: its chunk i is the call's chunk first + step*i.
type laneCodec struct {
	cd          codec
	first, step int
	n           int
}

func newLaneCodec(cd codec, first, step int) *laneCodec {
	n := 0
	if all := cd.numChunks(); first < all {
		n = (all - first + step - 1) / step
	}
	return &laneCodec{cd: cd, first: first, step: step, n: n}
}

func (l *laneCodec) numChunks() int                          { return l.n }
func (l *laneCodec) index(c int) int                         { return l.first + l.step*c }
func (l *laneCodec) load(c int, v *[4 * K]byte, bypass bool) { l.cd.load(l.index(c), v, bypass) }
func (l *laneCodec) store(c int, v *[4 * K]byte, float bool) { l.cd.store(l.index(c), v, float) }
func (l *laneCodec) isFloat(c int) bool                      { return l.cd.isFloat(l.index(c)) }
func (l *laneCodec) saturated(chunks []int) []int            { return l.cd.saturated(chunks) }
