package ps

import (
	"context"
	"fmt"
	"sync"

	"github.com/inapack/inapack/transport"
)

// Group is a PS on several threads: server k serves the chunks whose seq is k mod Threads, on its
// own transport (a socket with transport.LaneFilter for lane k of Threads, which also sends lane 0
// every frame that is no chunk of the jobs). A PS's work is per chunk (a chunk's merge, result and
// kept copy never look at another seq), so the lanes are independent PSes of the jobs' seq
// classes and share nothing: no lock, no counter, no buffer. Each lane keeps up to a job's Horizon
// incomplete chunks and results of its own, so a job's memory is Threads times one server's.
// Workers need not run as many threads (worker.Group): the wire is the same.
type Group struct {
	lanes []*Server
}

// MaxThreads bounds a Group's threads (worker.MaxThreads, for the same filter).
const MaxThreads = 64

// NewGroup returns cfg's PS on threads threads: a power of two (a seq's lane, seq mod Threads,
// stays the same when seqs wrap at 2^32), at most MaxThreads.
func NewGroup(cfg Config, threads int) (*Group, error) {
	if threads < 1 || threads > MaxThreads || threads&(threads-1) != 0 {
		return nil, fmt.Errorf("%w: %d threads: want a power of two up to %d", ErrConfig, threads, MaxThreads)
	}
	shift := uint8(0)
	for 1<<shift < threads {
		shift++
	}
	g := &Group{}
	for range threads {
		c := cfg
		c.Jobs = nil
		s, err := New(c)
		if err != nil {
			return nil, err
		}
		s.shift = shift
		g.lanes = append(g.lanes, s)
	}
	for _, jc := range cfg.Jobs {
		if err := g.AddJob(jc); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Threads is the number of lanes.
func (g *Group) Threads() int { return len(g.lanes) }

// Lane is lane k's server (for Handle and HandleBatch in memory).
func (g *Group) Lane(k int) *Server { return g.lanes[k] }

// Serve runs lane k's Server.Serve on ts[k], each on its own goroutine, until ctx is done or one
// fails; the first failure stops the others and is returned.
func (g *Group) Serve(ctx context.Context, ts []transport.Transport) error {
	if len(ts) != len(g.lanes) {
		return fmt.Errorf("%w: %d transports for %d threads", ErrConfig, len(ts), len(g.lanes))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for k, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[k] = g.lanes[k].Serve(ctx, t); errs[k] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("thread %d: %w", k, err)
		}
	}
	return nil
}

// AddJob starts serving a job on every lane.
func (g *Group) AddJob(jc JobConfig) error {
	for k, s := range g.lanes {
		if err := s.AddJob(jc); err != nil {
			for _, t := range g.lanes[:k] {
				t.RemoveJob(jc.Job)
			}
			return err
		}
	}
	return nil
}

// RemoveJob stops serving a job on every lane; it reports whether the job was served.
func (g *Group) RemoveJob(id uint16) bool {
	ok := false
	for _, s := range g.lanes {
		ok = s.RemoveJob(id) || ok
	}
	return ok
}

// Counters sums a job's counters over the lanes.
func (g *Group) Counters(id uint16) (Counters, bool) {
	var sum Counters
	for _, s := range g.lanes {
		c, ok := s.Counters(id)
		if !ok {
			return Counters{}, false
		}
		sum.Add(&c)
	}
	return sum, true
}

// Global sums the lanes' counters of frames of no job: each frame reaches one lane (LaneFilter).
func (g *Group) Global() Global {
	var sum Global
	for _, s := range g.lanes {
		o := s.Global()
		sum.Frames += o.Frames
		sum.NotINA += o.NotINA
		sum.Malformed += o.Malformed
		sum.NotData += o.NotData
		sum.UnknownJob += o.UnknownJob
		sum.SendErrors += o.SendErrors
	}
	return sum
}

// Pending sums a job's incomplete chunks and kept results over the lanes.
func (g *Group) Pending(id uint16) (pending, kept int) {
	for _, s := range g.lanes {
		p, k := s.Pending(id)
		pending, kept = pending+p, kept+k
	}
	return pending, kept
}
