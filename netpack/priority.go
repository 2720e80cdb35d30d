package netpack

import (
	"cmp"
	"math"
	"slices"
)

// Sharing selects how a ToR's INA capacity is divided among the jobs aggregating there when it
// saturates (Joint mode).
type Sharing int

const (
	// FairShare divides saturated INA capacity max-min fairly (ATP: slots go to whichever chunk
	// arrives first, and congestion control equalises the jobs).
	FairShare Sharing = iota
	// PriorityShare divides it by strict priority (ESA: a chunk of a higher Placement.Priority
	// preempts a slot held by a lower one, whose partial sum goes on to its PS). Equal priorities
	// share max-min fairly among themselves; a preempted job's traffic goes unaggregated.
	PriorityShare
)

func (s Sharing) String() string {
	if s == PriorityShare {
		return "priority"
	}
	return "fair"
}

// maxPriorityRounds bounds the allotment iterations; the last fill always respects capacities.
// priorityTol is the relative change of a share below which the allotment counts as settled
// (flows then are within about that fraction of the fixed point).
const (
	maxPriorityRounds = 16
	priorityTol       = 1e-4
)

// prioritise turns the max-min fair fill of comp into strict-priority INA sharing. Links stay
// max-min fair (congestion control knows no priority), so the result is a fixed point: INA
// shares are allotted by priority to the flows of the last fill (allot), the flows are re-filled
// with those shares pinned, and so on until the shares stop changing. When no saturated ToR has
// jobs of different priorities the fair fill already is that fixed point and nothing is redone.
func (e *Estimator) prioritise(comp []*ejob) {
	if !e.priorityBinds() {
		return
	}
	e.prioritised = true
	e.pinned = true
	defer func() { e.pinned = false }()
	for range maxPriorityRounds {
		if !e.allot() {
			return
		}
		clear(e.load)
		e.fill(comp, nil, false)
	}
}

// prioritiseAll applies the priority allotment after an incremental (max-min fair) re-fill, when
// it binds; the next change then re-fills the whole cluster.
func (e *Estimator) prioritiseAll() {
	if e.sharing != PriorityShare || !e.priorityBinds() {
		return
	}
	comp := make([]*ejob, 0, len(e.jobs))
	for _, j := range e.jobs {
		comp = append(comp, j)
	}
	slices.SortFunc(comp, func(a, b *ejob) int { return cmp.Compare(a.seq, b.seq) })
	e.prioritise(comp)
}

// priorityBinds reports whether some saturated ToR is shared by jobs of different priorities.
func (e *Estimator) priorityBinds() bool {
	for r := range e.c.Racks {
		res := e.x.ina(r)
		if e.cap[res] <= 0 || !e.saturated(res) || len(e.users[res]) < 2 {
			continue
		}
		p := e.users[res][0].p.Priority
		for _, k := range e.users[res][1:] {
			if k.p.Priority != p {
				return true
			}
		}
	}
	return false
}

// allot sets every INA share from the current flows: at each ToR whose jobs' flows exceed its
// INA capacity, priority classes in descending order take what they ask for (their flow); the
// first class that does not fit shares the rest max-min fairly; lower classes get nothing (their
// traffic falls back to the PS). At a ToR with room, shares are unlimited (+Inf). It reports
// whether any share changed by more than priorityTol.
func (e *Estimator) allot() bool {
	changed := false
	set := func(k *ejob, rack int, v float64) {
		for i, r := range k.inaRacks {
			if r != rack {
				continue
			}
			old := k.shares[i]
			if !(old == v || math.Abs(old-v) <= priorityTol*math.Max(math.Abs(old), math.Abs(v))) {
				changed = true
			}
			k.shares[i] = v
		}
	}
	var users []*ejob
	for r := range e.c.Racks {
		res := e.x.ina(r)
		if len(e.users[res]) == 0 {
			continue
		}
		users = append(users[:0], e.users[res]...)
		sum := 0.0
		for _, k := range users {
			sum += k.f
		}
		left := e.cap[res]
		if sum <= left*(1-satEps) {
			for _, k := range users {
				set(k, r, math.Inf(1))
			}
			continue
		}
		slices.SortStableFunc(users, func(a, b *ejob) int {
			if c := cmp.Compare(b.p.Priority, a.p.Priority); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
		for lo := 0; lo < len(users); {
			hi := lo
			class := 0.0
			for hi < len(users) && users[hi].p.Priority == users[lo].p.Priority {
				class += users[hi].f
				hi++
			}
			if class <= left {
				for _, k := range users[lo:hi] {
					set(k, r, k.f)
				}
				left -= class
			} else {
				lv := fairLevel(users[lo:hi], left)
				for _, k := range users[lo:hi] {
					set(k, r, math.Min(k.f, lv))
				}
				left = 0
			}
			lo = hi
		}
	}
	return changed
}

// fairLevel is the water level λ with Σ min(f_k, λ) = capacity (capacity < Σ f_k).
func fairLevel(ks []*ejob, capacity float64) float64 {
	fs := make([]float64, len(ks))
	for i, k := range ks {
		fs[i] = k.f
	}
	slices.Sort(fs)
	for i, f := range fs {
		n := float64(len(fs) - i)
		if f*n >= capacity {
			return capacity / n
		}
		capacity -= f
	}
	return math.Inf(1)
}
