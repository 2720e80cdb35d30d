package sim

import (
	"fmt"
	"math"
	"slices"
)

// Solver limits: Gauss-Seidel sweeps over the prices, outer rounds of the slot-collision fixed
// point, and the relative change below which either counts as settled.
const (
	maxSweeps   = 200
	maxOuter    = 40
	priceTol    = 1e-4
	collTol     = 1e-4
	busyINAFrac = 1e-2  // a ToR whose slots are busier than this couples its jobs through collisions
	zTiny       = 1e-12 // prices below this are 0 (marking probabilities, RTTs of queueing)
)

// settle brings every job a change since the last settle can affect to its new equilibrium. The
// component is found by closure: the changed jobs, every job sharing a congested resource (z > 0)
// or a busy slot pool with a component job, and the users of resources the new equilibrium
// congests; everything else keeps its rates, and its load is held fixed where it shares a
// resource with the component.
func (f *fluid) settle() {
	if len(f.dirty) == 0 && len(f.freed) == 0 && len(f.freedR) == 0 {
		return
	}
	f.epoch++
	var comp []*fjob
	var queue []int32
	addRes := func(r int32) {
		if f.inS[r] != f.epoch {
			f.inS[r] = f.epoch
			queue = append(queue, r)
		}
	}
	var addJob func(j *fjob)
	addRack := func(r int) {
		if f.rackIn[r] != f.epoch {
			f.rackIn[r] = f.epoch
			for _, k := range f.inaUsers[r] {
				addJob(k)
			}
		}
	}
	addJob = func(j *fjob) {
		if j.seen == f.epoch {
			return
		}
		j.seen = f.epoch
		comp = append(comp, j)
		for _, u := range j.uses {
			if f.res[u.res].z > 0 {
				addRes(u.res)
			}
		}
		for _, gi := range j.inaAt {
			if r := j.groups[gi].rack; f.slotsBusy(r) {
				addRack(r)
			}
		}
	}
	for _, j := range f.dirty {
		addJob(j)
		// A new job may congest any resource it can fill.
		lmax := math.Min(j.dcap, j.wcap/j.groups[0].base)
		for _, u := range j.uses {
			r := &f.res[u.res]
			worst := u.c + u.mult*j.groups[max(u.g, 0)].s
			if r.load+worst*lmax > r.cap*(1-1e-9) {
				addRes(u.res)
			}
		}
		for _, gi := range j.inaAt {
			addRack(j.groups[gi].rack)
		}
	}
	for _, r := range f.freed {
		addRes(r)
	}
	for _, r := range f.freedR {
		addRack(r)
	}
	for round := 0; ; round++ {
		for len(queue) > 0 {
			r := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, k := range f.res[r].users {
				addJob(k)
			}
		}
		if len(comp) == 0 {
			break
		}
		f.solve(comp)
		if round == 20 {
			break
		}
		for _, j := range comp {
			for _, u := range j.uses {
				if f.inS[u.res] != f.epoch && f.res[u.res].z > 0 && f.outsideUser(u.res) {
					addRes(u.res)
				}
			}
		}
		if len(queue) == 0 {
			break
		}
	}
	f.dirty, f.freed, f.freedR = f.dirty[:0], f.freed[:0], f.freedR[:0]
}

func (f *fluid) outsideUser(r int32) bool {
	for _, k := range f.res[r].users {
		if k.seen != f.epoch {
			return true
		}
	}
	return false
}

// slotsBusy reports whether rack r's aggregator slots are busy enough for collisions to couple
// its jobs.
func (f *fluid) slotsBusy(r int) bool {
	occ := 0.0
	for _, k := range f.inaUsers[r] {
		for _, gi := range k.inaAt {
			if g := &k.groups[gi]; g.rack == r {
				occ += k.lam * (1 - g.coll) * g.hold
			}
		}
	}
	return occ > busyINAFrac*f.slots[r]
}

// luser is a component job's load coefficient on one resource (packets per chunk).
type luser struct {
	j *fjob
	k float64
}

// solve finds the equilibrium of comp. Inner: prices by Gauss-Seidel over a work list (a
// resource is re-solved when a user's rate moved; its price is set so that its load meets its
// capacity, or 0 if it is not full). Outer: slot collisions from the inner solution, until they
// settle. Prices start from where the component was (the rates are unique, README "Network
// model", so this only saves work); collisions start cold (no collisions), as the iteration
// from there reaches the same fixed point whatever the component held before.
func (f *fluid) solve(comp []*fjob) {
	// The component's resources, numbered in order of first use (deterministic: comp's order is).
	f.stamp++
	idx := f.linkIdx
	links := f.sc.links[:0]
	for _, j := range comp {
		for _, u := range j.uses {
			if f.linkStamp[u.res] != f.stamp {
				f.linkStamp[u.res] = f.stamp
				idx[u.res] = int32(len(links))
				links = append(links, u.res)
			}
		}
	}
	f.sc.links = links
	bg := grow(&f.sc.bg, len(links))
	for i, l := range links {
		bg[i] = f.res[l].load // every user's load; the component's own is taken out below
	}
	for _, j := range comp {
		for u := range j.uses {
			bg[idx[j.uses[u].res]] -= j.coef(&j.uses[u]) * j.lam
		}
	}
	for i := range bg {
		bg[i] = max(0, bg[i])
	}
	// lusers[i]: the component's jobs on resource i with their coefficients; j.lpos: where.
	if len(f.sc.lusers) < len(links) {
		f.sc.lusers = append(f.sc.lusers, make([][]luser, len(links)-len(f.sc.lusers))...)
	}
	lusers := f.sc.lusers[:len(links)]
	for i := range lusers {
		lusers[i] = lusers[i][:0]
	}
	for _, j := range comp {
		for _, gi := range j.inaAt {
			g := &j.groups[gi]
			g.coll, g.agg, g.kAfter = 0, 1, 1 // the collision fixed point starts cold
		}
		j.links, j.lpos = j.links[:0], j.lpos[:0]
		for _, u := range j.uses {
			i := int(idx[u.res])
			if n := len(lusers[i]); n == 0 || lusers[i][n-1].j != j {
				lusers[i] = append(lusers[i], luser{j: j})
				j.links = append(j.links, i)
				j.lpos = append(j.lpos, int32(n))
			}
		}
	}
	// coefs sets j's coefficients in lusers from its current kAfter, and its burst limit.
	pos := grow(&f.sc.pos, len(links)) // j's entry in lusers[i], for the job coefs works on
	coefs := func(j *fjob) {
		for k, i := range j.links {
			lusers[i][j.lpos[k]].k = 0
			pos[i] = j.lpos[k]
		}
		for u := range j.uses {
			i := idx[j.uses[u].res]
			lusers[i][pos[i]].k += j.coef(&j.uses[u])
		}
		j.burst = math.Inf(1)
		for k, i := range j.links {
			if b := f.res[links[i]].cap / lusers[i][j.lpos[k]].k; b < j.burst {
				j.burst, j.burstAt = b, links[i]
			}
		}
	}
	inQ := grow(&f.sc.inQ, len(links))
	queue := f.sc.queue[:0]
	defer func() { f.sc.queue = queue[:0] }()
	push := func(i int) {
		if !inQ[i] {
			inQ[i] = true
			queue = append(queue, i)
		}
	}
	for outer := 0; outer < maxOuter; outer++ {
		for _, j := range comp {
			if outer == 0 || j.collMoved {
				coefs(j)
			}
			f.rate(j)
		}
		if outer == 0 {
			for i := range links {
				push(i)
			}
		} else {
			for _, j := range comp {
				if j.collMoved {
					for _, k := range j.links {
						push(k)
					}
				}
			}
		}
		for steps := 0; len(queue) > 0 && steps < maxSweeps*len(links); steps++ {
			i := queue[0]
			queue = queue[1:]
			inQ[i] = false
			old := f.res[links[i]].z
			z := f.solveLink(links[i], bg[i], lusers[i])
			if math.Abs(z-old) > priceTol*math.Max(z, old) && math.Max(z, old) > zTiny {
				// Its users' rates moved: re-solve their other resources. A higher price only
				// lowers rates, which cannot congest a resource that is not congested.
				for _, u := range lusers[i] {
					for _, k := range u.j.links {
						if k != i && (z < old || f.res[links[k]].z > 0) {
							push(k)
						}
					}
				}
			}
		}
		queue = queue[:0]
		clear(inQ)
		moved := f.collisions(comp)
		if !moved {
			break
		}
	}
	for i, l := range links {
		load := bg[i]
		for _, u := range lusers[i] {
			load += u.k * u.j.lam
		}
		f.res[l].load = load
	}
	for _, j := range comp {
		j.bneck = f.bottleneck(j)
		j.solvedAt = f.epoch
	}
}

// solveLink sets resource l's price so that its load meets its capacity (0 if it fits at price
// 0), leaves its users at their rates for that price, and returns it. Load falls as the price
// rises, so the root is bracketed and found by the Illinois variant of regula falsi on log z
// (prices span many decades; a handful of evaluations suffice).
func (f *fluid) solveLink(l int32, bg float64, us []luser) float64 {
	r := &f.res[l]
	if r.z == 0 {
		load := bg // the users' rates are those at price 0 here
		for _, u := range us {
			load += u.k * u.j.lam
		}
		if load <= r.cap {
			return 0
		}
	}
	// The users' price sums without l (their RTTs do not depend on z).
	if cap(f.rest) < len(us) {
		f.rest = make([]float64, len(us))
	}
	rest := f.rest[:len(us)]
	for i, u := range us {
		rest[i] = u.j.pz - f.unit(u.k)*r.z
	}
	excess := func(z float64) float64 {
		load := bg
		for i, u := range us {
			f.setRate(u.j, u.j.rtt, rest[i]+f.unit(u.k)*z)
			load += u.k * u.j.lam
		}
		return load - r.cap
	}
	settle := func(z float64) float64 {
		excess(z)
		r.z = z
		for i, u := range us {
			u.j.pz = rest[i] + f.unit(u.k)*z
		}
		return z
	}
	if excess(0) <= 0 {
		return settle(0)
	}
	lo, hi := 1e-9, 1e-9
	if r.z > 0 {
		lo, hi = r.z/2, r.z*2
	}
	eh := excess(hi)
	for i := 0; eh > 0; i++ {
		if i == 200 {
			return settle(hi) // cannot be met (bg alone exceeds the capacity): the highest price tried
		}
		lo, hi = hi, hi*4
		eh = excess(hi)
	}
	el := excess(lo)
	for i := 0; el <= 0; i++ {
		hi, eh = lo, el
		if lo < zTiny || i == 60 {
			return settle(hi)
		}
		lo /= 16
		el = excess(lo)
	}
	a, b := math.Log(lo), math.Log(hi)
	side := 0
	for i := 0; i < 60 && b-a > 1e-6; i++ {
		m := b - eh*(b-a)/(eh-el)
		if !(m > a && m < b) {
			m = (a + b) / 2
		}
		em := excess(math.Exp(m))
		if math.Abs(em) <= 1e-7*r.cap {
			b = m
			break
		}
		if em > 0 {
			a, el = m, em
			if side == -1 {
				eh /= 2
			}
			side = -1
		} else {
			b, eh = m, em
			if side == 1 {
				el /= 2
			}
			side = 1
		}
	}
	return settle(math.Exp(b))
}

// unit is how much of a resource's price a job with k packets per chunk there pays: k marks
// with ECN, one queue's delay without.
func (f *fluid) unit(k float64) float64 {
	if f.n.ECNOff {
		return 1
	}
	return k
}

// collisions updates every component job's slot-collision and eviction probabilities from the
// current rates (damped by half) and reports whether any aggregated fraction moved by more than
// collTol. Rack r's slots are busy by job k's chunks for occ_k = λ_k (1 − coll_k) hold_k on
// average (Little's law), spread over k's slot range of w_k slots (the whole pool when its range
// is not given). A chunk of j finds its slot held by k with probability occ_k · overlap/(w_j w_k)
// (occ_k / N for spread ranges); it then falls back to the PS (all s of its packets), unless ESA
// preemption is on and j's priority is higher, when it evicts k's partial instead. A chunk of j
// holding a slot is evicted by a higher-priority chunk arriving at rate λ_k · overlap/(w_j w_k);
// its partial and the rest of its packets go to the PS ((s+1)/2 packets on average).
func (f *fluid) collisions(comp []*fjob) bool {
	var racks []int
	for _, j := range comp {
		for _, gi := range j.inaAt {
			racks = append(racks, j.groups[gi].rack)
		}
	}
	slices.Sort(racks)
	racks = slices.Compact(racks)
	moved := false
	for _, j := range comp {
		j.collMoved = false
	}
	for _, r := range racks {
		us := f.inaUsers[r]
		N := f.slots[r]
		type st struct {
			g        *fgroup
			j        *fjob
			lo, w    float64
			occ, arr float64
		}
		ss := make([]st, 0, len(us))
		for _, k := range us {
			for _, gi := range k.inaAt {
				g := &k.groups[gi]
				if g.rack != r {
					continue
				}
				f.holdOf(k, g)
				w := math.Min(k.wcap, N)
				ss = append(ss, st{g: g, j: k, lo: k.slotLo, w: w, occ: k.lam * (1 - g.coll) * g.hold, arr: k.lam * (1 - g.coll)})
			}
		}
		ovl := func(a, b *st) float64 {
			if a.lo < 0 || b.lo < 0 {
				return 1 / N
			}
			o := math.Min(a.lo+a.w, b.lo+b.w) - math.Max(a.lo, b.lo)
			return math.Max(0, o) / (a.w * b.w)
		}
		for i := range ss {
			a := &ss[i]
			if a.j.seen != f.epoch {
				continue // outside the component: held fixed
			}
			block, hazard := 0.0, 0.0
			for k := range ss {
				if k == i {
					continue
				}
				b := &ss[k]
				o := ovl(a, b)
				if f.preempt && b.j.p.Priority > a.j.p.Priority {
					hazard += b.arr * o
				}
				if !f.preempt || b.j.p.Priority >= a.j.p.Priority {
					block += b.occ * o
				}
			}
			coll := math.Min(1, block)
			evict := 1 - math.Exp(-hazard*a.g.hold)
			agg := (1 - coll) * (1 - evict)
			g := a.g
			newColl := 0.3*g.coll + 0.7*coll
			newAgg := 0.3*g.agg + 0.7*agg
			if math.Abs(newAgg-g.agg) > collTol || math.Abs(newColl-g.coll) > collTol {
				moved = true
				a.j.collMoved = true
			}
			g.coll, g.agg = newColl, newAgg
			ev := 0.0
			if g.coll < 1 {
				ev = 1 - g.agg/(1-g.coll)
			}
			g.kAfter = g.agg + g.coll*g.s + (1-g.coll)*ev*(g.s+1)/2
		}
	}
	return moved
}

// holdOf sets how long a chunk of j holds a slot at group g's ToR: the skew between its first and
// last contribution (SkewFrac of the rack's RTT); ATP adds the round trip to the PS and back (the
// group's base RTT) and the PS's answer time.
func (f *fluid) holdOf(j *fjob, g *fgroup) {
	rtt := f.c.Racks[g.rack].RTTSec
	if rtt <= 0 {
		rtt = g.base
	}
	h := f.n.Slots.SkewFrac * rtt
	if f.n.Slots.Policy == ATP {
		h += g.base + f.n.Slots.PSSec
	}
	g.hold = h
}

// bottleneck names what limits j: "compute", the resource with the highest price on its path,
// or "window" (nothing congested: its window over its RTT).
func (f *fluid) bottleneck(j *fjob) string {
	if j.x >= j.dcap*(1-1e-9) {
		return "compute"
	}
	best, bz := int32(-1), 0.0
	for _, u := range j.uses {
		if z := f.res[u.res].z; z > bz {
			best, bz = u.res, z
		}
	}
	if best < 0 && j.x >= j.burst*(1-1e-9) {
		best = j.burstAt
	}
	if best < 0 {
		return "window"
	}
	r := &f.res[best]
	return fmt.Sprintf("%s:%d", kindName[r.kind], r.id)
}

// fluidRate is a job's equilibrium in the flow-level model.
type fluidRate struct {
	IterPerSec float64 // iterations per second
	CommBps    float64 // gradient bytes/s per worker while communicating
	INAFrac    float64 // fraction of the job's streams' chunks aggregated in switches
	Bottleneck string
}

func (f *fluid) rateOf(id string) (fluidRate, bool) {
	j, ok := f.jobs[id]
	if !ok || j.solvedAt == 0 {
		return fluidRate{}, false
	}
	s, a := 0.0, 0.0
	for gi := range j.groups {
		g := &j.groups[gi]
		s += g.s
		if g.ina {
			a += g.s * g.agg
		}
	}
	return fluidRate{IterPerSec: 1 / f.iterTime(j, j.x), CommBps: j.x * f.n.ChunkBytes, INAFrac: a / s, Bottleneck: j.bneck}, true
}

// streamRates is what job id's workers push (chunks/s over all its streams, time-mean) and how
// much of it switches aggregate.
func (f *fluid) streamRates(id string) (pushed, aggregated float64) {
	j, ok := f.jobs[id]
	if !ok {
		return 0, 0
	}
	for gi := range j.groups {
		g := &j.groups[gi]
		pushed += j.lam * g.s
		if g.ina {
			aggregated += j.lam * g.s * g.agg
		}
	}
	return pushed, aggregated
}

// scratch is solve's reusable memory: a run settles thousands of times.
type scratch struct {
	links  []int32
	bg     []float64
	lusers [][]luser
	pos    []int32
	inQ    []bool
	queue  []int
}

// grow returns (*buf)[:n] zeroed, growing it when needed.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	b := (*buf)[:n]
	clear(b)
	return b
}
