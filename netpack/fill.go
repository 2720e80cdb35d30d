package netpack

import (
	"cmp"
	"math"
	"slices"
)

// fill water-fills the jobs in comp against the load already on each resource (e.load must not
// include comp's contributions): every active job's flow rises together; a job freezes when a
// link it loads saturates or it reaches its compute-bound flow; when a ToR's INA capacity
// saturates, the active jobs aggregating there keep their INA share and send the rest unaggregated
// (fallback to the PS), which raises their load on links. skip excludes resources and inaFreezes
// makes INA saturation freeze jobs like a link (both for Separate mode). With e.pinned the jobs'
// INA shares are kept (the priority allotment of priority.go): a job's traffic above its share
// falls back to the PS from the level where its flow crosses the share.
// On return e.load includes comp's new contributions.
func (e *Estimator) fill(comp []*ejob, skip func(int32) bool, inaFreezes bool) {
	e.epoch++
	e.touched = e.touched[:0]
	active := 0
	for _, j := range comp {
		j.f = 0
		for i := range j.shares {
			if !e.pinned {
				j.shares[i] = math.Inf(1)
			}
			j.crossed[i] = j.shares[i] <= 0
		}
		j.active = false
		j.bottleneck = bnLocal
		for _, u := range j.uses {
			if skip != nil && skip(u.res) {
				continue
			}
			if e.mark[u.res] != e.epoch {
				e.mark[u.res] = e.epoch
				e.touched = append(e.touched, u.res)
				e.slope[u.res] = 0
				e.base[u.res] = e.load[u.res]
			}
			e.slope[u.res] += u.slope(0, j.shares)
			j.active = true
		}
		if j.active {
			active++
		} else {
			j.f = j.demand
		}
	}
	level := 0.0
	for active > 0 {
		dt := math.Inf(1)
		for _, j := range comp {
			if j.active {
				dt = math.Min(dt, j.demand-level)
				if e.pinned {
					dt = math.Min(dt, nextCrossing(j, level))
				}
			}
		}
		for _, r := range e.touched {
			if s := e.slope[r]; s > 0 {
				dt = math.Min(dt, (e.cap[r]-e.load[r])/s)
			}
		}
		dt = math.Max(dt, 0)
		level += dt
		for _, r := range e.touched {
			e.load[r] += e.slope[r] * dt
		}
		if e.pinned {
			for _, j := range comp {
				if j.active {
					e.cross(j, level)
				}
			}
		}
		for _, r := range e.touched {
			if e.slope[r] <= 0 || !e.saturated(r) {
				continue
			}
			if e.x.isINA(r) && !inaFreezes {
				e.saturateINA(r, level)
				continue
			}
			for _, k := range e.users[r] {
				if k.active && e.slopeOn(k, r, level, skip) > 0 {
					e.freeze(k, level, r, skip)
					active--
				}
			}
		}
		for _, j := range comp {
			if j.active && level >= j.demand*(1-1e-12) {
				e.freeze(j, level, bnCompute, skip)
				active--
			}
		}
	}
	// Recompute loads from contributions so incremental and full fills agree to rounding.
	for _, r := range e.touched {
		e.load[r] = e.base[r]
	}
	for _, j := range comp {
		for _, u := range j.uses {
			if skip == nil || !skip(u.res) {
				e.load[u.res] += u.load(j.f, j.shares)
			}
		}
	}
}

// saturateINA fixes the INA share of every active job aggregating at INA resource r whose flow
// has not yet reached its share.
func (e *Estimator) saturateINA(r int32, level float64) {
	for _, k := range e.users[r] {
		if !k.active {
			continue
		}
		for i, rack := range k.inaRacks {
			if e.x.ina(rack) == r && !k.crossed[i] {
				e.crossShare(k, i, level)
			}
		}
	}
}

// crossShare caps share i of k at level: from here its traffic above the share falls back to
// the PS, so its slope on the links after that ToR rises from kA to kF.
func (e *Estimator) crossShare(k *ejob, i int, level float64) {
	k.shares[i] = level
	k.crossed[i] = true
	for _, u := range k.uses {
		if int(u.inaSlot) == i && e.mark[u.res] == e.epoch {
			e.slope[u.res] += u.kF - u.kA
		}
	}
}

// nextCrossing is the distance from level to the nearest pinned share of j not yet reached.
func nextCrossing(j *ejob, level float64) float64 {
	d := math.Inf(1)
	for i, sh := range j.shares {
		if !j.crossed[i] {
			d = math.Min(d, sh-level)
		}
	}
	return d
}

// cross flips every pinned share of j that the level has reached.
func (e *Estimator) cross(j *ejob, level float64) {
	for i, sh := range j.shares {
		if !j.crossed[i] && level >= sh*(1-1e-12) {
			e.crossShare(j, i, level)
		}
	}
}

func (e *Estimator) slopeOn(k *ejob, r int32, level float64, skip func(int32) bool) float64 {
	s := 0.0
	for _, u := range k.uses {
		if u.res == r && (skip == nil || !skip(r)) {
			s += u.slope(level, k.shares)
		}
	}
	return s
}

func (e *Estimator) freeze(k *ejob, level float64, why int32, skip func(int32) bool) {
	k.f = level
	k.active = false
	k.bottleneck = why
	for _, u := range k.uses {
		if skip == nil || !skip(u.res) {
			e.slope[u.res] -= u.slope(level, k.shares)
		}
	}
}

// refillAll recomputes every job from scratch.
func (e *Estimator) refillAll() {
	clear(e.load)
	comp := make([]*ejob, 0, len(e.jobs))
	for _, j := range e.jobs {
		comp = append(comp, j)
	}
	// A fixed order makes full re-fills reproducible to the last bit (map order is random).
	slices.SortFunc(comp, func(a, b *ejob) int { return cmp.Compare(a.seq, b.seq) })
	if e.mode == Separate {
		e.fillSeparate(comp)
		return
	}
	e.fill(comp, nil, false)
	e.prioritised = false
	if e.sharing == PriorityShare {
		e.prioritise(comp)
	}
}

// fillSeparate estimates bandwidth assuming INA never runs out, and INA ignoring links, then gives
// each job the smaller of the two; loads are those of the combined flows with full aggregation.
func (e *Estimator) fillSeparate(comp []*ejob) {
	isINA := func(r int32) bool { return e.x.isINA(r) }
	notINA := func(r int32) bool { return !e.x.isINA(r) }
	e.fill(comp, isINA, false)
	bw := make([]float64, len(comp))
	bn := make([]int32, len(comp))
	for i, j := range comp {
		bw[i], bn[i] = j.f, j.bottleneck
	}
	clear(e.load)
	e.fill(comp, notINA, true)
	clear(e.load)
	for i, j := range comp {
		if bw[i] <= j.f {
			j.f, j.bottleneck = bw[i], bn[i]
		}
		for k := range j.shares {
			j.shares[k] = math.Inf(1)
		}
		for _, u := range j.uses {
			e.load[u.res] += u.load(j.f, j.shares)
		}
	}
}
