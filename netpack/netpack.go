package netpack

import (
	"math"
	"slices"
	"sort"
)

func init() {
	register("netpack", func(o Options) Placer {
		return &netpackPlacer{opt: o, t: tracker{mode: o.Mode, full: o.FullEstimate}}
	})
	// NetPack before it priced fragmentation (issue 15's): harm to running jobs and resource
	// shares only, its own machine sets only. Kept so the evaluation can show what changed.
	register("netpack-v1", func(o Options) Placer {
		return &netpackPlacer{opt: o, t: tracker{mode: o.Mode, full: o.FullEstimate}, v1: true}
	})
}

// netpackPlacer is NetPack's placement: worker DP and PS choice scored with its own Estimator,
// and INA enablement for the round. The estimator is kept between rounds and brought up to date
// with the State it is given (tracker), so a round costs the changes, not the cluster. Not safe
// for concurrent use.
type netpackPlacer struct {
	opt Options
	t   tracker
	w   *npWork // the round in progress
	// v1 is netpack-v1: no fragmentation price (fragPrice), no locality-packing candidate, and
	// the multi-rack DP charges an uplink only for the harm to its jobs.
	v1 bool

	free, rackFree, rackGPUs []int // scratch for npWork, reused across rounds
	frag                     fragPrice
	queue                    []*Job // the round's waiting jobs (Queue), in demand with the running ones
}

// Queue takes the round's waiting jobs: the demand the fragmentation price protects free blocks
// for is theirs as well as that of jobs like the running ones.
func (p *netpackPlacer) Queue(waiting []*Job) { p.queue = waiting }

func (p *netpackPlacer) Name() string {
	n := "netpack"
	if p.v1 {
		n += "-v1"
	}
	if p.opt.Mode == Separate {
		n += "-separate"
	}
	if p.opt.NoINA {
		n += "-noina"
	}
	return n
}

// npWork is one round's scratch: free GPUs as jobs are placed, and the estimator.
type npWork struct {
	c        *Cluster
	st       *State
	est      *Estimator
	free     []int
	freeSum  int
	rackFree []int
	noINA    bool
	v1       bool // netpackPlacer.v1
	// frag prices fragmentation when set (nil for netpack-v1); rackGPUs are the racks' GPUs.
	frag     *fragPrice
	rackGPUs []int
}

// Candidate racks for the worker DP.
const (
	singleRackCandidates = 3
	multiRackCandidates  = 6
	psWorkerCandidates   = 4
	// maxDPGPUs bounds the DP's GPU dimension; larger jobs are spread over the fullest machines.
	maxDPGPUs = 1024
)

func (p *netpackPlacer) Begin(st *State) {
	p.t.sync(st)
	// Scratch slices are reused across rounds: at 10,000 machines a fresh copy per round is most
	// of the garbage a one-job round makes.
	p.free = append(p.free[:0], st.free...)
	p.rackFree = slices.Grow(p.rackFree[:0], len(st.Cluster.Racks))[:len(st.Cluster.Racks)]
	clear(p.rackFree)
	p.rackGPUs = slices.Grow(p.rackGPUs[:0], len(st.Cluster.Racks))[:len(st.Cluster.Racks)]
	clear(p.rackGPUs)
	p.w = &npWork{c: st.Cluster, st: st, est: p.t.est, free: p.free, freeSum: st.freeSum, rackFree: p.rackFree, noINA: p.opt.NoINA, v1: p.v1,
		rackGPUs: p.rackGPUs}
	for m, f := range p.w.free {
		p.w.rackFree[st.Cluster.Machines[m].Rack] += f
		p.w.rackGPUs[st.Cluster.Machines[m].Rack] += st.Cluster.Machines[m].GPUs
	}
	if !p.v1 {
		p.frag.begin(p.t.est, p.queue)
		p.w.frag = &p.frag
	}
	p.queue = nil // one round's
}

func (p *netpackPlacer) Place(j *Job) (Placement, bool) {
	w := p.w
	if !placeable(w.st, j, w.freeSum) {
		return Placement{}, false
	}
	if _, dup := w.est.jobs[j.ID]; dup {
		return Placement{}, false // placed earlier in this round
	}
	pl, ok := w.place(j)
	if !ok {
		return Placement{}, false
	}
	if _, racks := buildUses(w.c, w.est.x, &pl); len(racks) == 0 {
		pl.INA = false // no ToR would aggregate: say so rather than enable INA for nothing
	}
	if err := w.est.Add(pl); err != nil {
		return Placement{}, false // cannot happen for a placement built here; never start a job the estimator rejects
	}
	for _, wk := range pl.Workers {
		w.free[wk.Machine] -= wk.GPUs
		w.rackFree[w.c.Machines[wk.Machine].Rack] -= wk.GPUs
	}
	w.freeSum -= j.GPUs
	if w.frag != nil && !w.frag.queued[j.ID] {
		w.frag.add(j.GPUs) // in demand for the rest of the round, like a running job
	}
	p.t.pending = append(p.t.pending, j.ID)
	return pl, true
}

func (p *netpackPlacer) End(placed []Placement) []Placement {
	if p.w != nil {
		p.w.enableINA(placed)
	}
	p.w = nil
	return placed
}

// place chooses workers and the PS for one job, or reports that it does not fit.
func (w *npWork) place(j *Job) (Placement, bool) {
	g := j.GPUs
	// A job that fits one machine needs no network: best fit (fewest free GPUs left), lowest id.
	best := bestFit(w.free, g)
	one := []Worker{{Machine: best, GPUs: g}}
	if best >= 0 && j.PSAllowed(one, best) {
		return Placement{Job: j, Workers: one, PS: best, INA: !w.noINA}, true
	}
	d := j.Model.scoreDemand()
	if g > maxDPGPUs {
		if ws := spreadFullest(w.free, g); ws != nil {
			if ps, ok := w.firstPS(j, ws, d); ok {
				return Placement{Job: j, Workers: ws, PS: ps, INA: !w.noINA}, true
			}
		}
		return Placement{}, false
	}
	var bestP Placement
	var bestPred prediction
	bestV := math.Inf(-1)
	consider := func(ws []Worker, psCands []MachineID) {
		frag := 0.0
		if w.frag != nil {
			frag = w.fragDelta(ws, g)
		}
		for _, ps := range psCands {
			p := Placement{Job: j, Workers: ws, PS: ps, INA: !w.noINA}
			pr := w.est.predict(&p)
			pr.value -= frag
			if better(pr.value, bestV) {
				bestV, bestP, bestPred = pr.value, p, pr
			}
		}
	}
	if best >= 0 {
		// The job fits one machine but its PS may not share it (PSMaxGPUs): the PS goes to another
		// machine of the rack, weighed against spreading the workers.
		consider(one, w.psCandidates(j, one, w.racksOf(one), d))
	}
	// Locality packing first (what the best baselines do): ties keep the earlier candidate, so
	// NetPack departs from packing only where its estimate, with the fragmentation price, says
	// another machine set is better.
	if !w.v1 {
		if ws := packLocal(w.c, w.free, w.rackFree, g); ws != nil {
			consider(ws, w.psCandidates(j, ws, w.racksOf(ws), d))
		}
	}
	// Single rack: the DP gives the best machine set for each flow count; the PS goes in the rack.
	racks := w.racksBy(func(a, b int) bool { return w.rackFree[a] < w.rackFree[b] }, func(r int) bool { return w.rackFree[r] >= g })
	for _, r := range racks[:min(len(racks), singleRackCandidates)] {
		dp := w.newRackDP(r, g, d)
		for n := 1; n < len(dp.val); n++ {
			if ws := dp.workers(n, g); ws != nil {
				consider(ws, w.psCandidates(j, ws, []int{r}, d))
			}
		}
	}
	if bestP.Job == nil || bestPred.flow < d*(1-1e-9) || bestPred.harm > 0 {
		if ws, rs := w.multiRack(g, d); ws != nil {
			consider(ws, w.psCandidates(j, ws, rs, d))
		}
	}
	if bestP.Job == nil {
		// More GPUs than the DP's candidate machines hold: spread over the fullest machines.
		if ws := spreadFullest(w.free, g); ws != nil {
			if ps, ok := w.firstPS(j, ws, d); ok {
				return Placement{Job: j, Workers: ws, PS: ps, INA: !w.noINA}, true
			}
		}
	}
	return bestP, bestP.Job != nil
}

// firstPS is the PS of a spread placement: its first machine, else (PSMaxGPUs) the first of
// psCandidates, else any machine allowed.
func (w *npWork) firstPS(j *Job, ws []Worker, d float64) (MachineID, bool) {
	if j.PSAllowed(ws, ws[0].Machine) {
		return ws[0].Machine, true
	}
	if c := w.psCandidates(j, ws, w.racksOf(ws), d); len(c) > 0 {
		return c[0], true
	}
	for m := range w.c.Machines {
		if j.PSAllowed(ws, MachineID(m)) {
			return MachineID(m), true
		}
	}
	return 0, false
}

// spreadFullest takes GPUs from the machines with the most free GPUs (ties: lowest id).
func spreadFullest(free []int, g int) []Worker {
	order := make([]MachineID, 0, len(free))
	for m, f := range free {
		if f > 0 {
			order = append(order, MachineID(m))
		}
	}
	slices.SortStableFunc(order, func(a, b MachineID) int { return free[b] - free[a] })
	return takeInOrder(free, order, g)
}

// racksOf lists the racks of ws (workers in machine order), each once.
func (w *npWork) racksOf(ws []Worker) []int {
	var rs []int
	for _, wk := range ws {
		if r := w.c.Machines[wk.Machine].Rack; len(rs) == 0 || rs[len(rs)-1] != r {
			rs = append(rs, r)
		}
	}
	return rs
}

// racksBy lists racks passing keep, ordered by less then index.
func (w *npWork) racksBy(less func(a, b int) bool, keep func(int) bool) []int {
	var rs []int
	for r := range w.c.Racks {
		if keep(r) {
			rs = append(rs, r)
		}
	}
	sort.SliceStable(rs, func(a, b int) bool { return less(rs[a], rs[b]) })
	return rs
}

// psCandidates are the worker machines with the most GPUs (colocation saves their stream) and
// the machine with the most spare NIC in each worker rack, of those j.PSAllowed.
func (w *npWork) psCandidates(j *Job, ws []Worker, racks []int, d float64) []MachineID {
	order := slices.Clone(ws)
	slices.SortStableFunc(order, func(a, b Worker) int { return b.GPUs - a.GPUs })
	if j.PSMaxGPUs > 0 {
		order = slices.DeleteFunc(order, func(wk Worker) bool { return !j.PSAllowed(ws, wk.Machine) })
	}
	var out []MachineID
	for _, wk := range order[:min(len(order), psWorkerCandidates)] {
		out = append(out, wk.Machine)
	}
	for _, r := range racks {
		rk := &w.c.Racks[r]
		best, bestSpare := MachineID(-1), math.Inf(-1)
		for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
			if !j.PSAllowed(ws, m) {
				continue
			}
			res := w.est.x.nic(m)
			if s := w.est.cap[res] - w.est.load[res]; s > bestSpare {
				best, bestSpare = m, s
			}
		}
		if best >= 0 && !slices.Contains(out, best) {
			out = append(out, best)
		}
	}
	return out
}

// better reports whether v beats best by more than rounding, so that estimates equal up to
// floating-point noise keep the earlier (deterministic) candidate.
func better(v, best float64) bool {
	if math.IsInf(best, -1) {
		return !math.IsInf(v, -1)
	}
	return v > best+1e-9*math.Max(1, math.Abs(best))
}
