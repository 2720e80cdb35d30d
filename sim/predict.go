package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/inapack/inapack/netpack"
)

// MixJob is one job of a fixed mix for Predict: where it runs and when it starts.
type MixJob struct {
	// Placement: Job (model, iterations), workers, PS, INA and ESA Priority, as netpack gives it.
	Placement netpack.Placement
	Start     float64 // seconds from 0
	// Window is the job's chunks in flight (its agents' window, also its slot range); 0: the
	// network's. With SlotRange, its slots are [SlotBase, SlotBase+Window) at every ToR where it
	// aggregates; otherwise they are taken as spread over the ToR's whole pool.
	Window    float64
	SlotBase  float64
	SlotRange bool
}

// Outcome is what Predict computes for one job.
type Outcome struct {
	ID         string
	Start, End float64 // seconds
	JCT        float64 // End − Start (no queueing: the mix says when jobs start)
	IterPerSec float64 // iterations / (End − Start)
	// CommBps is the time-mean of the gradient bytes/s each worker moves while communicating
	// (all-reduce goodput); 0 for a job without network. INAFrac is the time-mean fraction of
	// its streams' chunks aggregated in switches.
	CommBps, INAFrac float64
	// Bottleneck is what limited the job for most of its run: "compute", "local" (no network),
	// "window", or a resource "<kind>:<machine or rack index>" (kinds: nic-tx, nic-rx, uplink-up,
	// uplink-down, core, switch, ps-cpu).
	Bottleneck string
}

// Predict runs a fixed mix (no admission, no placement decisions) on cluster c under the network
// model n and returns each job's outcome, in mix order. Jobs start at their Start and run their
// Job.Iterations; rates are re-solved whenever a job starts or ends. It is the simulator's
// entry point for validating the model against measurements on a small emulated cluster.
func Predict(c *netpack.Cluster, mix []MixJob, n Network) ([]Outcome, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range mix {
		p := &mix[i].Placement
		if err := p.Validate(c); err != nil {
			return nil, err
		}
		if err := p.Job.Validate(c); err != nil {
			return nil, err
		}
		if seen[p.Job.ID] {
			return nil, fmt.Errorf("predict: job id %q appears twice", p.Job.ID)
		}
		seen[p.Job.ID] = true
		if s := mix[i].Start; !(s >= 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("predict: job %s: start must be a time >= 0, got %v", p.Job.ID, s)
		}
		if mix[i].Window < 0 || math.IsNaN(mix[i].Window) || math.IsInf(mix[i].Window, 0) || (mix[i].SlotRange && mix[i].SlotBase < 0) {
			return nil, fmt.Errorf("predict: job %s: window %v, slot base %v", p.Job.ID, mix[i].Window, mix[i].SlotBase)
		}
	}
	// Machines may be shared only as far as their GPUs allow.
	free := make([]int, len(c.Machines))
	for i := range c.Machines {
		free[i] = c.Machines[i].GPUs
	}
	f := newFluid(c, n)
	type pj struct {
		i          int
		left       float64
		rate       float64
		started    bool
		net        bool
		lastT      float64
		comm, ina  float64 // ∫ CommBps dt, ∫ INAFrac dt
		bneck      map[string]float64
		cur        fluidRate
		start, end float64
	}
	js := make([]*pj, len(mix))
	order := make([]int, len(mix))
	for i := range mix {
		js[i] = &pj{i: i, left: float64(mix[i].Placement.Job.Iterations), net: !isLocal(mix[i].Placement), bneck: map[string]float64{}}
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(mix[a].Start, mix[b].Start) })
	now, next, done := 0.0, 0, 0
	var active []*pj
	refresh := func() {
		f.settle()
		for _, j := range active {
			if !j.net {
				j.rate = 1 / mix[j.i].Placement.Job.Model.ComputeSec
				j.cur = fluidRate{Bottleneck: "local"}
				continue
			}
			j.cur, _ = f.rateOf(mix[j.i].Placement.Job.ID)
			j.rate = j.cur.IterPerSec
		}
	}
	for done < len(mix) {
		tNext := math.Inf(1)
		if next < len(order) {
			tNext = mix[order[next]].Start
		}
		var fin *pj
		tFin := math.Inf(1)
		for _, j := range active {
			if j.rate > 0 {
				if t := now + j.left/j.rate; t < tFin {
					tFin, fin = t, j
				}
			}
		}
		t := math.Min(tNext, tFin)
		if math.IsInf(t, 1) {
			return nil, fmt.Errorf("predict: no job can progress at t = %v s", now)
		}
		for _, j := range active {
			dt := t - now
			j.left -= j.rate * dt
			j.comm += j.cur.CommBps * dt
			j.ina += j.cur.INAFrac * dt
			j.bneck[j.cur.Bottleneck] += dt
		}
		now = t
		if t == tFin {
			fin.left, fin.end = 0, now
			done++
			active = slices.DeleteFunc(active, func(x *pj) bool { return x == fin })
			p := &mix[fin.i].Placement
			for _, w := range p.Workers {
				free[w.Machine] += w.GPUs
			}
			if fin.net {
				f.remove(p.Job.ID)
			}
		} else {
			for next < len(order) && mix[order[next]].Start == t {
				j := js[order[next]]
				next++
				m := &mix[j.i]
				for _, w := range m.Placement.Workers {
					if free[w.Machine] < w.GPUs {
						return nil, fmt.Errorf("predict: job %s starts at %v s on machine %d, which has %d free GPUs", m.Placement.Job.ID, t, w.Machine, free[w.Machine])
					}
					free[w.Machine] -= w.GPUs
				}
				j.started, j.start = true, t
				if j.net {
					lo := -1.0
					if m.SlotRange {
						lo = m.SlotBase
					}
					if err := f.add(m.Placement, m.Window, lo); err != nil {
						return nil, err
					}
				}
				active = append(active, j)
			}
		}
		refresh()
	}
	out := make([]Outcome, len(mix))
	for i, j := range js {
		run := j.end - j.start
		o := Outcome{ID: mix[i].Placement.Job.ID, Start: j.start, End: j.end, JCT: run, Bottleneck: "local"}
		if run > 0 {
			o.IterPerSec = float64(mix[i].Placement.Job.Iterations) / run
			o.CommBps, o.INAFrac = j.comm/run, j.ina/run
		}
		best := -1.0
		for b, d := range j.bneck {
			if d > best || (d == best && b < o.Bottleneck) {
				o.Bottleneck, best = b, d
			}
		}
		out[i] = o
	}
	return out, nil
}
