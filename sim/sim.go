// Package sim is a flow-level, event-driven simulator of a GPU cluster with statistical in-network
// aggregation: trace arrivals, periodic batch scheduling by a netpack.Policy, and job rates from
// netpack's water-filling equilibrium, recomputed on every start and finish.
package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/inapack/inapack/netpack"
)

// Config is one simulation run.
type Config struct {
	// Cluster is the effective cluster (see EffectiveCluster): policy and rate model share it.
	Cluster *netpack.Cluster
	Policy  netpack.Policy
	// Interval is the batch scheduling period in seconds: waiting jobs are offered to the
	// policy at t = 0, Interval, 2 Interval, ...
	Interval float64
	// Warmup excludes jobs submitted before it from the summary (they still run).
	Warmup float64
	// Sharing is how a saturated ToR's INA capacity is divided in the rate model: PriorityShare
	// (by Placement.Priority) for ESA's preemption, FairShare for ATP (see SlotModel.Sharing).
	Sharing netpack.Sharing
	// Progress, if set, is called after every job completion with (done, total).
	Progress func(done, total int)
}

// Run simulates jobs (sorted by Submit) to completion. It returns an error if a policy
// returns an invalid placement or if jobs can never finish (zero rate, or a job no policy
// decision will ever start while the cluster is empty).
func Run(cfg Config, jobs []*netpack.Job) (*Result, error) {
	if cfg.Interval <= 0 || math.IsNaN(cfg.Interval) || math.IsInf(cfg.Interval, 0) {
		return nil, fmt.Errorf("sim: scheduling interval must be positive, got %v", cfg.Interval)
	}
	if err := cfg.Cluster.Validate(); err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(jobs, func(a, b *netpack.Job) int { return cmpFloat(a.Submit, b.Submit) }) {
		return nil, errors.New("sim: jobs must be sorted by submit time")
	}
	seen := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		if err := j.Validate(cfg.Cluster); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("sim: job id %q appears twice", j.ID)
		}
		seen[j.ID] = true
	}
	s := newState(cfg, jobs)
	if err := s.loop(); err != nil {
		return nil, err
	}
	return s.result(), nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// running is a job in progress: iterations left as of last, at rate iterations/s.
type running struct {
	job     *netpack.Job
	rec     *JobResult
	left    float64
	rate    netpack.JobRate
	place   netpack.Placement
	finish  float64 // predicted completion time at the current rate
	seq     int     // start order
	local   bool    // one worker on the PS machine: no network, constant rate
	traffic traffic // stream shape, for link utilisation
	heapIdx int
}

type state struct {
	cfg     Config
	jobs    []*netpack.Job
	next    int // next arrival
	now     float64
	last    float64 // time remaining work was last brought up to date
	waiting []*netpack.Job
	net     []*running // running jobs that use the network, in start order
	local   localHeap  // running jobs on one machine with their PS: constant rate, fixed finish
	seq     int        // start counter, breaks ties between equal finish times
	st      *netpack.State
	est     *netpack.Estimator
	recs    []JobResult
	recIdx  map[string]int
	done    int
	dirty   bool // something changed since the last scheduling attempt
	usage   usage
}

func newState(cfg Config, jobs []*netpack.Job) *state {
	s := &state{cfg: cfg, jobs: jobs, st: netpack.NewState(cfg.Cluster),
		est: netpack.NewEstimatorSharing(cfg.Cluster, netpack.Joint, cfg.Sharing), recs: make([]JobResult, len(jobs)),
		recIdx: make(map[string]int, len(jobs))}
	for i, j := range jobs {
		s.recs[i] = JobResult{ID: j.ID, GPUs: j.GPUs, Model: j.Model.Name, Iterations: j.Iterations,
			Submit: j.Submit, Start: math.NaN(), End: math.NaN()}
		s.recIdx[j.ID] = i
	}
	s.usage.init(cfg.Cluster)
	return s
}

// loop advances from event to event: arrivals, completions and scheduling ticks.
func (s *state) loop() error {
	for s.done < len(s.jobs) {
		tArr := math.Inf(1)
		if s.next < len(s.jobs) {
			tArr = s.jobs[s.next].Submit
		}
		tFin, fin := s.nextFinish()
		tTick := math.Inf(1)
		if len(s.waiting) > 0 && s.dirty {
			tTick = math.Ceil(s.now/s.cfg.Interval) * s.cfg.Interval
		}
		t := min(tArr, tFin, tTick)
		if math.IsInf(t, 1) {
			return s.stuck()
		}
		s.advance(t)
		switch {
		case t == tFin:
			s.finish(fin)
		case t == tArr:
			for s.next < len(s.jobs) && s.jobs[s.next].Submit == t {
				s.waiting = append(s.waiting, s.jobs[s.next])
				s.next++
			}
			s.dirty = true
		default:
			if err := s.schedule(); err != nil {
				return err
			}
			// A tick that starts nothing leaves the state as it was; the next attempt waits for
			// an arrival or a completion (the policy sees the same input until then).
			s.dirty = false
		}
	}
	return nil
}

// nextFinish is the earliest predicted completion (ties broken by start order).
func (s *state) nextFinish() (float64, *running) {
	var which *running
	if len(s.local) > 0 {
		which = s.local[0]
	}
	for _, r := range s.net {
		if which == nil || r.before(which) {
			which = r
		}
	}
	if which == nil {
		return math.Inf(1), nil
	}
	return which.finish, which
}

// advance moves time to t, charging every running job its progress and the usage counters.
func (s *state) advance(t float64) {
	dt := t - s.last
	if dt > 0 {
		// Local jobs keep their start-time prediction; only network jobs' rates change.
		for _, r := range s.net {
			r.left -= r.rate.IterPerSec * dt
		}
		s.usage.bytes(dt)
		// Utilisation covers the arrival window only: after the last arrival a cluster
		// drains and the long tail of a few jobs would dominate any average.
		if lastArr := s.jobs[len(s.jobs)-1].Submit; s.last < lastArr {
			s.usage.charge(min(t, lastArr) - s.last)
		}
	}
	s.last, s.now = t, t
}

func (s *state) finish(r *running) {
	r.rec.End = s.now
	s.done++
	if _, ok := s.st.Remove(r.job.ID); !ok {
		panic("sim: finished job not in state") // internal invariant: finish only sees started jobs
	}
	s.est.Remove(r.job.ID)
	s.usage.gpuBusy -= float64(r.job.GPUs)
	if r.local {
		heap.Remove(&s.local, r.heapIdx)
		s.finished()
		return
	}
	s.net = slices.DeleteFunc(s.net, func(x *running) bool { return x == r })
	s.refreshRates()
	s.finished()
}

func (s *state) finished() {
	s.dirty = true
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.done, len(s.jobs))
	}
}

// schedule offers the waiting jobs to the policy and starts what it places.
func (s *state) schedule() error {
	ps := s.cfg.Policy.Schedule(s.st, s.waiting)
	if len(ps) == 0 {
		return nil
	}
	started := make(map[string]bool, len(ps))
	for _, p := range ps {
		if p.Job == nil {
			return fmt.Errorf("sim: policy %s returned a placement without a job", s.cfg.Policy.Name())
		}
		i, ok := s.recIdx[p.Job.ID]
		if !ok || started[p.Job.ID] || !slices.Contains(s.waiting, p.Job) {
			return fmt.Errorf("sim: policy %s placed job %s, which is not waiting", s.cfg.Policy.Name(), p.Job.ID)
		}
		if err := s.st.Add(p); err != nil {
			return fmt.Errorf("sim: policy %s: %w", s.cfg.Policy.Name(), err)
		}
		if err := s.est.Add(p); err != nil {
			return fmt.Errorf("sim: estimator rejected %s: %w", p.Job.ID, err)
		}
		started[p.Job.ID] = true
		rec := &s.recs[i]
		rec.Start = s.now
		rec.Machines, rec.Racks = spread(s.cfg.Cluster, p)
		rec.INA = p.INA
		r := &running{job: p.Job, rec: rec, left: float64(p.Job.Iterations), place: p, seq: s.seq,
			local: len(p.Workers) == 1 && p.Workers[0].Machine == p.PS}
		s.seq++
		s.usage.gpuBusy += float64(p.Job.GPUs)
		if !r.local {
			r.traffic = trafficOf(s.cfg.Cluster, &p)
			s.net = append(s.net, r)
			continue
		}
		r.rate, _ = s.est.Rate(p.Job.ID)
		r.predict(s.now)
		heap.Push(&s.local, r)
	}
	s.waiting = slices.DeleteFunc(s.waiting, func(j *netpack.Job) bool { return started[j.ID] })
	s.refreshRates()
	return nil
}

// refreshRates re-reads every network job's equilibrium rate and re-predicts its completion.
func (s *state) refreshRates() {
	for _, r := range s.net {
		r.rate, _ = s.est.Rate(r.job.ID)
		r.predict(s.now)
	}
	s.usage.rates(s.net)
}

// predict sets the completion time from the iterations left at the current rate.
func (r *running) predict(now float64) {
	switch {
	case r.left <= 0:
		r.finish = now
	case r.rate.IterPerSec > 0:
		r.finish = now + r.left/r.rate.IterPerSec
	default:
		r.finish = math.Inf(1)
	}
}

// stuck explains why no event is left while jobs are unfinished.
func (s *state) stuck() error {
	for _, r := range append(s.net, s.local...) {
		return fmt.Errorf("sim: job %s makes no progress (rate 0, bottleneck %s)", r.job.ID, r.rate.Bottleneck)
	}
	return fmt.Errorf("sim: policy %s leaves %d jobs waiting on an idle cluster (first: %s, %d GPUs)",
		s.cfg.Policy.Name(), len(s.waiting), s.waiting[0].ID, s.waiting[0].GPUs)
}

// spread counts the machines and racks a placement uses.
func spread(c *netpack.Cluster, p netpack.Placement) (machines, racks int) {
	last := -1
	for _, w := range p.Workers {
		if r := c.Machines[w.Machine].Rack; r != last {
			racks++
			last = r
		}
	}
	return len(p.Workers), racks
}
