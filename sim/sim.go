// Package sim is a flow-level, event-driven simulator of a GPU cluster with statistical in-network
// aggregation: trace arrivals, periodic batch scheduling by a netpack.Policy, and job rates from
// its own network model (AIMD congestion control at equilibrium, statistical slot sharing with
// collisions, slot hold times from RTT and skew, ESA or ATP), recomputed on every start and finish.
// NetPack's water-filling estimator is not the simulator; Config.Estimate measures its error.
package sim

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/inapack/inapack/netpack"
)

// Config is one simulation run.
type Config struct {
	// Cluster is the physical cluster. The policy (and the estimator of Estimate) see
	// EffectiveCluster(Cluster, Network.Slots, !NoINA): rack RTTs replaced by the slot hold time,
	// which is how netpack turns memory into an INA rate.
	Cluster *netpack.Cluster
	Network Network
	NoINA   bool // no ToR aggregates (and the policy is told so through the effective cluster)
	Policy  netpack.Policy
	// Interval is the batch scheduling period in seconds: waiting jobs are offered to the
	// policy at t = 0, Interval, 2 Interval, ...
	Interval float64
	// Warmup excludes jobs submitted before it from the summary (they still run).
	Warmup float64
	// Estimate also keeps netpack's joint estimator on the running jobs and records, per job, the
	// iteration rate it predicted (time-mean over the job's run) beside the simulated one.
	Estimate bool
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
	if err := cfg.Network.Validate(); err != nil {
		return nil, err
	}
	if !slices.IsSortedFunc(jobs, func(a, b *netpack.Job) int { return cmp.Compare(a.Submit, b.Submit) }) {
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

// physical is the cluster the network model runs on: c, without INA memory when ina is false.
func physical(c *netpack.Cluster, ina bool) *netpack.Cluster {
	if ina {
		return c
	}
	return EffectiveCluster(c, DefaultSlotModel(), false)
}

// running is a job in progress: iterations left as of the last event, at rate iterations/s.
type running struct {
	job     *netpack.Job
	rec     *JobResult
	left    float64
	rate    float64 // iterations/s now
	net     fluidRate
	est     float64 // the estimator's iterations/s now (Config.Estimate)
	estInt  float64 // ∫ est dt over the run so far
	finish  float64 // predicted completion time at the current rate
	seq     int     // start order
	local   bool    // every worker on the PS machine: no network, constant rate
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
	fl      *fluid
	est     *netpack.Estimator // Config.Estimate only
	recs    []JobResult
	recIdx  map[string]int
	done    int
	dirty   bool // something changed since the last scheduling attempt
	usage   usage
}

func newState(cfg Config, jobs []*netpack.Job) *state {
	eff := EffectiveCluster(cfg.Cluster, cfg.Network.withDefaults().Slots, !cfg.NoINA)
	s := &state{cfg: cfg, jobs: jobs, st: netpack.NewState(eff), fl: newFluid(physical(cfg.Cluster, !cfg.NoINA), cfg.Network),
		recs: make([]JobResult, len(jobs)), recIdx: make(map[string]int, len(jobs))}
	if cfg.Estimate {
		s.est = netpack.NewEstimator(eff, netpack.Joint)
	}
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
			r.left -= r.rate * dt
			r.estInt += r.est * dt
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
	s.usage.gpuBusy -= float64(r.job.GPUs)
	if r.local {
		heap.Remove(&s.local, r.heapIdx)
		s.finished()
		return
	}
	if run := r.rec.End - r.rec.Start; run > 0 {
		r.rec.SimIterPerSec = float64(r.job.Iterations) / run
		if s.est != nil {
			r.rec.EstIterPerSec = r.estInt / run
		}
	}
	s.fl.remove(r.job.ID)
	if s.est != nil {
		s.est.Remove(r.job.ID)
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
		started[p.Job.ID] = true
		rec := &s.recs[i]
		rec.Start = s.now
		rec.Machines, rec.Racks = spread(s.cfg.Cluster, p)
		rec.INA = p.INA
		r := &running{job: p.Job, rec: rec, left: float64(p.Job.Iterations), seq: s.seq, local: isLocal(p)}
		s.seq++
		s.usage.gpuBusy += float64(p.Job.GPUs)
		if r.local {
			r.rate = 1 / p.Job.Model.ComputeSec
			r.predict(s.now)
			heap.Push(&s.local, r)
			continue
		}
		if err := s.fl.add(p, 0, -1); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if s.est != nil {
			if err := s.est.Add(p); err != nil {
				return fmt.Errorf("sim: estimator rejected %s: %w", p.Job.ID, err)
			}
		}
		s.net = append(s.net, r)
	}
	s.waiting = slices.DeleteFunc(s.waiting, func(j *netpack.Job) bool { return started[j.ID] })
	s.refreshRates()
	return nil
}

// isLocal reports whether a placement uses no network: every worker on the PS machine.
func isLocal(p netpack.Placement) bool {
	for _, w := range p.Workers {
		if w.Machine != p.PS {
			return false
		}
	}
	return true
}

// refreshRates settles the network model and re-reads every network job's rate.
func (s *state) refreshRates() {
	s.fl.settle()
	for _, r := range s.net {
		r.net, _ = s.fl.rateOf(r.job.ID)
		r.rate = r.net.IterPerSec
		if s.est != nil {
			e, _ := s.est.Rate(r.job.ID)
			r.est = e.IterPerSec
		}
		r.predict(s.now)
	}
	s.usage.rates(s.fl, s.net)
}

// predict sets the completion time from the iterations left at the current rate.
func (r *running) predict(now float64) {
	switch {
	case r.left <= 0:
		r.finish = now
	case r.rate > 0:
		r.finish = now + r.left/r.rate
	default:
		r.finish = math.Inf(1)
	}
}

// stuck explains why no event is left while jobs are unfinished.
func (s *state) stuck() error {
	for _, r := range append(s.net, s.local...) {
		return fmt.Errorf("sim: job %s makes no progress (rate 0, bottleneck %s)", r.job.ID, r.net.Bottleneck)
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
