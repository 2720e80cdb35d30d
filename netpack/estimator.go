package netpack

import (
	"fmt"
	"math"
	"slices"
)

// Estimator holds the steady state of a set of running jobs and keeps it up to date as jobs start
// and end, re-filling only the component of jobs the change can affect (see README "Incremental
// estimation"). The zero value is not usable; use NewEstimator.
type Estimator struct {
	c      *Cluster
	mode   Mode
	x      resIndex
	cap    []float64 // bytes/s
	maxNIC float64   // largest NIC capacity, bytes/s
	load   []float64 // bytes/s at the current rates
	users  [][]*ejob // jobs with a use on each resource (each job once)
	jobs   map[string]*ejob
	full   bool // re-fill everything on every change (reference behaviour for tests)

	sharing Sharing // how a saturated ToR's INA capacity is divided (Joint mode)
	pinned  bool    // fill keeps the jobs' INA shares (priority allotment in progress)
	// prioritised: the state holds a priority allotment, not the max-min fair equilibrium
	prioritised bool
	nextSeq     uint64 // add order, for a reproducible full re-fill

	// scratch reused across fills
	slope   []float64
	touched []int32
	base    []float64
	mark    []uint32
	epoch   uint32
	inS     []uint32 // component search: resource in S when == sEpoch
	sEpoch  uint32
	cEpoch  uint32 // component search: job in component when ejob.seen == cEpoch
	// sizeGPUs are the GPUs of the jobs in the estimator by job size: the demand NetPack's
	// fragmentation price weighs (frag.go), kept here so a round need not scan every job.
	sizeGPUs map[int]int
}

// ejob is one job inside the estimator.
type ejob struct {
	p          Placement
	demand     float64 // compute-bound flow: Model.DemandBps
	uses       []use
	inaRacks   []int
	shares     []float64 // INA share per INA rack, +Inf while unsaturated
	crossed    []bool    // during a fill: the flow has reached shares[i] (slopes use kF)
	seq        uint64    // add order
	f          float64
	bottleneck int32 // resource index, -1 compute, -2 local (no network)
	active     bool
	seen       uint32
}

const (
	bnCompute = -1
	bnLocal   = -2
	satEps    = 1e-9 // relative: a resource is saturated when load >= cap*(1-satEps)
)

// NewEstimator is an estimator for cluster c (which must pass Cluster.Validate) with no jobs,
// sharing saturated INA capacity max-min fairly (FairShare).
func NewEstimator(c *Cluster, mode Mode) *Estimator { return NewEstimatorSharing(c, mode, FairShare) }

// NewEstimatorSharing is NewEstimator with a choice of how a saturated ToR's INA capacity is
// shared (PriorityShare models ESA's preemption; Separate mode ignores it).
func NewEstimatorSharing(c *Cluster, mode Mode, sharing Sharing) *Estimator {
	x := resIndex{machines: len(c.Machines), racks: len(c.Racks)}
	n := x.count()
	if mode == Separate {
		sharing = FairShare
	}
	e := &Estimator{c: c, mode: mode, sharing: sharing, x: x, cap: make([]float64, n), load: make([]float64, n),
		users: make([][]*ejob, n), jobs: map[string]*ejob{}, sizeGPUs: map[int]int{}, slope: make([]float64, n), base: make([]float64, n),
		mark: make([]uint32, n), inS: make([]uint32, n)}
	for i, m := range c.Machines {
		e.cap[x.nic(MachineID(i))] = m.NICGbps * 1e9 / 8
		e.maxNIC = max(e.maxNIC, e.cap[x.nic(MachineID(i))])
	}
	for r := range c.Racks {
		e.cap[x.uplink(r)] = c.Racks[r].UplinkGbps * 1e9 / 8
		e.cap[x.ina(r)] = c.INAPeakBps(r)
	}
	e.cap[x.core()] = c.CoreGbps * 1e9 / 8
	return e
}

// Estimate is the steady state of running (one-shot form of Estimator); the result is parallel
// to running. Placements that fail validation get a zero rate with Bottleneck "invalid: ...".
func Estimate(c *Cluster, running []Placement, mode Mode) []JobRate {
	return EstimateSharing(c, running, mode, FairShare)
}

// EstimateSharing is Estimate with a choice of INA sharing (see NewEstimatorSharing).
func EstimateSharing(c *Cluster, running []Placement, mode Mode, sharing Sharing) []JobRate {
	e := NewEstimatorSharing(c, mode, sharing)
	e.full = true
	out := make([]JobRate, len(running))
	errs := make([]error, len(running))
	for i := range running {
		errs[i] = e.add(running[i], false)
	}
	e.refillAll()
	for i := range running {
		if errs[i] != nil {
			out[i] = JobRate{Bottleneck: "invalid: " + errs[i].Error()}
			continue
		}
		out[i], _ = e.Rate(running[i].Job.ID)
	}
	return out
}

// Add starts a job and updates the rates it can affect.
func (e *Estimator) Add(p Placement) error { return e.add(p, true) }

func (e *Estimator) add(p Placement, refill bool) error {
	if err := p.Validate(e.c); err != nil {
		return err
	}
	if err := p.Job.Validate(nil); err != nil {
		return err
	}
	if _, dup := e.jobs[p.Job.ID]; dup {
		return fmt.Errorf("job %s is already in the estimator", p.Job.ID)
	}
	j := &ejob{p: p, demand: p.Job.Model.DemandBps()}
	j.uses, j.inaRacks = buildUses(e.c, e.x, &j.p)
	j.shares = make([]float64, len(j.inaRacks))
	j.crossed = make([]bool, len(j.inaRacks))
	j.seq = e.nextSeq
	e.nextSeq++
	e.jobs[p.Job.ID] = j
	e.sizeGPUs[p.Job.GPUs] += p.Job.GPUs
	e.eachRes(j, func(r int32) { e.users[r] = append(e.users[r], j) })
	if !refill {
		return nil
	}
	if e.wholeCluster() {
		e.refillAll()
		return nil
	}
	e.refillFrom([]*ejob{j}, nil)
	e.prioritiseAll()
	return nil
}

// Remove ends a job; it reports whether the job was there.
func (e *Estimator) Remove(jobID string) bool {
	j, ok := e.jobs[jobID]
	if !ok {
		return false
	}
	var res, sat []int32
	e.eachRes(j, func(r int32) {
		res = append(res, r)
		if e.saturated(r) {
			sat = append(sat, r)
		}
	})
	for _, u := range j.uses {
		e.load[u.res] -= u.load(j.f, j.shares)
	}
	for _, r := range res {
		e.users[r] = slices.DeleteFunc(e.users[r], func(k *ejob) bool { return k == j })
	}
	delete(e.jobs, jobID)
	if g := j.p.Job.GPUs; e.sizeGPUs[g] == g {
		delete(e.sizeGPUs, g)
	} else {
		e.sizeGPUs[g] -= g
	}
	if e.wholeCluster() {
		e.refillAll()
		return true
	}
	e.refillFrom(nil, sat)
	e.prioritiseAll()
	return true
}

// wholeCluster reports whether this change must re-fill the whole cluster: for tests, in Separate
// mode, and when the current state holds a priority allotment (the incremental fill starts from
// a max-min fair state; see priority.go).
func (e *Estimator) wholeCluster() bool {
	return e.full || e.mode == Separate || e.prioritised
}

// Rate is the steady state of a job in the estimator.
func (e *Estimator) Rate(jobID string) (JobRate, bool) {
	j, ok := e.jobs[jobID]
	if !ok {
		return JobRate{}, false
	}
	r := JobRate{FlowBps: finiteOr0(j.f), IterPerSec: j.p.Job.Model.IterPerSec(j.f), Bottleneck: e.resName(j.bottleneck)}
	for i := range j.inaRacks {
		r.INABps += math.Min(j.f, j.shares[i])
	}
	return r, true
}

// Len is the number of jobs in the estimator.
func (e *Estimator) Len() int { return len(e.jobs) }

func (e *Estimator) resName(r int32) string {
	switch {
	case r == bnCompute:
		return "compute"
	case r == bnLocal:
		return "local"
	case int(r) < e.x.machines:
		return fmt.Sprintf("nic:%d", r)
	case int(r) < e.x.machines+e.x.racks:
		return "uplink:" + e.c.Racks[int(r)-e.x.machines].Name
	case r == e.x.core():
		return "core"
	default:
		return "ina:" + e.c.Racks[int(r)-e.x.machines-e.x.racks-1].Name
	}
}

// eachRes calls fn once per distinct resource j uses.
func (e *Estimator) eachRes(j *ejob, fn func(int32)) {
	e.epoch++
	for _, u := range j.uses {
		if e.mark[u.res] != e.epoch {
			e.mark[u.res] = e.epoch
			fn(u.res)
		}
	}
}

func (e *Estimator) saturated(r int32) bool {
	return e.load[r] >= e.cap[r]*(1-satEps)
}

// finiteOr0 reports an unbounded flow (a job without network use and without compute bound on
// its flow) as 0.
func finiteOr0(f float64) float64 {
	if math.IsInf(f, 0) {
		return 0
	}
	return f
}
