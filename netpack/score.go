package netpack

import (
	"math"
	"slices"
)

// shareOf predicts what k new streams of a job with compute-bound flow d get on resource r, and
// how much of r they take from jobs already there. It water-fills r alone: the existing jobs keep
// their flow if it is below the new level λ, and are cut to λ otherwise, with
// k·λ + Σ_i a_i·min(f_i, λ) = cap(r), a_i being job i's load on r per unit of its flow.
// got = min(d, λ); taken = max(0, k·got − spare(r)) is the harm.
func (e *Estimator) shareOf(r int32, k, d float64) (got, taken float64) {
	spare := math.Max(0, e.cap[r]-e.load[r])
	if k*d <= spare {
		return d, 0
	}
	type fl struct{ f, a float64 }
	var us []fl
	for _, j := range e.users[r] {
		if j.f <= 0 {
			continue
		}
		l := 0.0
		for _, u := range j.uses {
			if u.res == r {
				l += u.load(j.f, j.shares)
			}
		}
		if l > 0 {
			us = append(us, fl{j.f, l / j.f})
		}
	}
	slices.SortFunc(us, func(a, b fl) int {
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	})
	// Users at or below λ keep their load; the rest are cut to λ.
	fixed, slope := 0.0, k
	for _, u := range us {
		slope += u.a
	}
	lambda := e.cap[r] / slope
	for _, u := range us {
		if u.f > lambda {
			break
		}
		fixed += u.a * u.f
		slope -= u.a
		lambda = (e.cap[r] - fixed) / slope
	}
	got = math.Min(d, math.Max(lambda, 0))
	return got, math.Max(0, k*got-spare)
}

// prediction is the value of a candidate placement: the job's predicted flow and the harm it does.
type prediction struct {
	flow, harm float64 // bytes/s
	// value = GPUs·flow/d − harm/d − Σ_r k_r·flow/cap_r: throughput gained, minus throughput taken
	// from running jobs, minus the share of each resource consumed (which later jobs will miss).
	value float64
}

// predict evaluates placement p for a job not yet in the estimator. Each resource is judged
// alone with shareOf using the job's stream count on it. At an INA ToR the job is predicted an INA
// share x = got of shareOf on that ToR's INA capacity; a fraction a = x/d of its traffic is
// aggregated, so its coefficient on the links after that ToR is a·1 + (1−a)·s_R, and the INA share
// it takes from other jobs counts as harm. In Separate mode links are judged fully aggregated and
// the INA share caps the flow instead (the two budgets apart).
func (e *Estimator) predict(p *Placement) prediction {
	d := p.Job.Model.scoreDemand()
	uses, inaRacks := buildUses(e.c, e.x, p)
	aggFrac := make([]float64, len(inaRacks))
	harm := 0.0
	for i, rack := range inaRacks {
		got, taken := e.shareOf(e.x.ina(rack), 1, d)
		aggFrac[i] = got / d
		harm += taken
	}
	// Sum the job's coefficient per resource.
	type rk struct {
		r int32
		k float64
	}
	var per []rk
	for _, u := range uses {
		if e.x.isINA(u.res) {
			continue
		}
		k := u.kA
		if u.inaSlot >= 0 && e.mode == Joint {
			a := aggFrac[u.inaSlot]
			k = a*u.kA + (1-a)*u.kF
		}
		found := false
		for i := range per {
			if per[i].r == u.res {
				per[i].k += k
				found = true
				break
			}
		}
		if !found {
			per = append(per, rk{u.res, k})
		}
	}
	flow := d
	if e.mode == Separate {
		// Separate budgets: links as if fully aggregated, INA share as a hard limit.
		for _, a := range aggFrac {
			flow = math.Min(flow, a*d)
		}
	}
	for _, x := range per {
		got, _ := e.shareOf(x.r, x.k, d)
		flow = math.Min(flow, got)
	}
	use := 0.0
	for _, x := range per {
		spare := math.Max(0, e.cap[x.r]-e.load[x.r])
		harm += math.Max(0, x.k*flow-spare)
		use += x.k * flow / e.cap[x.r]
	}
	g := float64(p.Job.GPUs)
	return prediction{flow: flow, harm: harm, value: g*flow/d - harm/d - use}
}
