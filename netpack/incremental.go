package netpack

import "math"

// refillFrom re-fills the component a change can affect. Seeds are jobs just added; seedRes are
// saturated resources a removed job has just released. The component is found by closure: S starts with seedRes
// and the seeds' saturated resources; every job using a resource in S
// joins the component, and every saturated resource of a component job joins S. Jobs outside the
// component have no saturated resource in S, so their bottlenecks are untouched; their load on
// the component's other resources is held fixed. After the fill, a resource outside S that became
// saturated while an outside job runs on it at a higher level than any component job would break
// max-min fairness: S grows by that resource and the component is filled again.
func (e *Estimator) refillFrom(seeds []*ejob, seedRes []int32) {
	e.sEpoch++
	e.cEpoch++
	var comp []*ejob
	var queue []int32
	addRes := func(r int32) {
		if e.inS[r] != e.sEpoch {
			e.inS[r] = e.sEpoch
			queue = append(queue, r)
		}
	}
	addJob := func(j *ejob) {
		if j.seen == e.cEpoch {
			return
		}
		j.seen = e.cEpoch
		comp = append(comp, j)
		for _, u := range j.uses {
			if e.saturated(u.res) {
				addRes(u.res)
			}
		}
	}
	for _, r := range seedRes {
		addRes(r)
	}
	for _, j := range seeds {
		addJob(j)
	}
	for {
		for len(queue) > 0 {
			r := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, k := range e.users[r] {
				addJob(k)
			}
		}
		for _, j := range comp {
			for _, u := range j.uses {
				e.load[u.res] -= u.load(j.f, j.shares)
			}
		}
		e.fill(comp, nil, false)
		for _, j := range comp {
			for _, u := range j.uses {
				if e.inS[u.res] != e.sEpoch && e.saturated(u.res) && e.outsideAbove(u.res) {
					addRes(u.res)
				}
			}
		}
		if len(queue) == 0 {
			return
		}
	}
}

// outsideAbove reports whether a job outside the current component uses resource r at a higher
// level than every component job on r (for INA resources the level is the INA share in use).
func (e *Estimator) outsideAbove(r int32) bool {
	inside, outside := 0.0, 0.0
	for _, k := range e.users[r] {
		lv := e.levelOn(k, r)
		if k.seen == e.cEpoch {
			inside = math.Max(inside, lv)
		} else {
			outside = math.Max(outside, lv)
		}
	}
	return outside > inside*(1+1e-9)
}

func (e *Estimator) levelOn(k *ejob, r int32) float64 {
	if e.x.isINA(r) {
		for i, rack := range k.inaRacks {
			if e.x.ina(rack) == r {
				return math.Min(k.f, k.shares[i])
			}
		}
	}
	return k.f
}
