package netpack

import (
	"math"
	"slices"
	"sort"
)

func init() {
	register("netpack", func(o Options) Policy { return &netpackPolicy{opt: o} })
}

// netpackPolicy is NetPack. It keeps its own Estimator between calls and brings it up to date
// with the State it is given (adding and removing the jobs that changed), so a call costs the
// changes, not the cluster. Not safe for concurrent use.
type netpackPolicy struct {
	opt     Options
	est     *Estimator
	st      *State   // the state est mirrors
	gen     uint64   // st's generation est has caught up with
	pending []string // jobs placed by the last Schedule, in est whether or not the caller applied them

	free, rackFree []int // scratch for npWork
}

func (p *netpackPolicy) Name() string {
	n := "netpack"
	if p.opt.Mode == Separate {
		n += "-separate"
	}
	if p.opt.NoINA {
		n += "-noina"
	}
	return n
}

// npWork is one Schedule call's scratch: free GPUs as jobs are placed, and the estimator.
type npWork struct {
	c        *Cluster
	est      *Estimator
	free     []int
	rackFree []int
	noINA    bool
}

// Candidate racks for the worker DP.
const (
	singleRackCandidates = 3
	multiRackCandidates  = 6
	psWorkerCandidates   = 4
	// maxDPGPUs bounds the DP's GPU dimension; larger jobs are spread over the fullest machines.
	maxDPGPUs = 1024
)

func (p *netpackPolicy) Schedule(st *State, waiting []*Job) []Placement {
	p.sync(st)
	// Scratch slices are reused across calls: at 10,000 machines a fresh copy per call is most of
	// the garbage a one-job call makes.
	p.free = append(p.free[:0], st.free...)
	p.rackFree = slices.Grow(p.rackFree[:0], len(st.Cluster.Racks))[:len(st.Cluster.Racks)]
	clear(p.rackFree)
	w := &npWork{c: st.Cluster, est: p.est, free: p.free, rackFree: p.rackFree, noINA: p.opt.NoINA}
	maxFree := 0
	for m, f := range w.free {
		w.rackFree[st.Cluster.Machines[m].Rack] += f
		maxFree = max(maxFree, f)
	}
	// Admission value (README): a started job stops queueing, so each is worth one, discounted by
	// the speed it can reach and weighted up to 2x by age.
	n := float64(len(waiting))
	value := func(i int) float64 {
		j := waiting[i]
		rho := 1.0
		if j.GPUs > maxFree {
			rho = math.Min(1, p.est.maxNIC/(j.Model.GradientBytes/j.Model.ComputeSec))
		}
		return rho * (1 + (n-float64(i))/n)
	}
	idx := admitKnapsack(st, waiting, value)
	// Admitted jobs are placed in queue order: the oldest get the best spots.
	var out []Placement
	for _, i := range idx {
		j := waiting[i]
		pl, ok := w.place(j)
		if !ok {
			continue
		}
		pl.Priority = esaPriority(j)
		if _, racks := buildUses(w.c, w.est.x, &pl); len(racks) == 0 {
			pl.INA = false // no ToR would aggregate: say so rather than enable INA for nothing
		}
		if err := w.est.Add(pl); err != nil {
			continue // cannot happen for a placement built here; never start a job the estimator rejects
		}
		for _, wk := range pl.Workers {
			w.free[wk.Machine] -= wk.GPUs
			w.rackFree[w.c.Machines[wk.Machine].Rack] -= wk.GPUs
		}
		out = append(out, pl)
	}
	w.enableINA(out)
	for _, pl := range out {
		p.pending = append(p.pending, pl.Job.ID)
	}
	return out
}

// sync brings the policy's estimator to st's running set: through st's change journal when it
// is the state seen last time, else by comparing every running job.
func (p *netpackPolicy) sync(st *State) {
	if p.est == nil || p.est.c != st.Cluster {
		p.est = NewEstimator(st.Cluster, p.opt.Mode)
		p.est.full = p.opt.FullEstimate
		for _, r := range st.Running {
			_ = p.est.add(r, false) // st.Add validated it
		}
		p.est.refillAll()
		p.st, p.gen, p.pending = st, st.gen, nil
		return
	}
	ids, now, ok := st.changesSince(p.gen)
	if p.st != st || !ok {
		ids = nil // ids may alias st's journal: never append to it
		for id := range p.est.jobs {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, r := range st.Running {
			ids = append(ids, r.Job.ID)
		}
	}
	ids = append(slices.Clone(p.pending), ids...)
	for _, id := range ids {
		p.syncJob(st, id)
	}
	p.st, p.gen, p.pending = st, now, p.pending[:0]
}

// syncJob makes the estimator's view of one job match st.
func (p *netpackPolicy) syncJob(st *State, id string) {
	r, running := st.Lookup(id)
	j, known := p.est.jobs[id]
	if known && (!running || r.Job != j.p.Job || r.PS != j.p.PS || r.INA != j.p.INA || !slices.Equal(r.Workers, j.p.Workers)) {
		p.est.Remove(id)
		known = false
	}
	if running && !known {
		_ = p.est.Add(r)
	}
}

// place chooses workers and the PS for one job, or reports that it does not fit.
func (w *npWork) place(j *Job) (Placement, bool) {
	g := j.GPUs
	// A job that fits one machine needs no network: best fit (fewest free GPUs left), lowest id.
	best := bestFit(w.free, g)
	if best >= 0 {
		return Placement{Job: j, Workers: []Worker{{Machine: best, GPUs: g}}, PS: best, INA: !w.noINA}, true
	}
	if g > maxDPGPUs {
		if ws := spreadFullest(w.free, g); ws != nil {
			return Placement{Job: j, Workers: ws, PS: ws[0].Machine, INA: !w.noINA}, true
		}
		return Placement{}, false
	}
	d := j.Model.GradientBytes / j.Model.ComputeSec
	var bestP Placement
	var bestPred prediction
	bestV := math.Inf(-1)
	consider := func(ws []Worker, psCands []MachineID) {
		for _, ps := range psCands {
			p := Placement{Job: j, Workers: ws, PS: ps, INA: !w.noINA}
			if pr := w.est.predict(&p); better(pr.value, bestV) {
				bestV, bestP, bestPred = pr.value, p, pr
			}
		}
	}
	// Single rack: the DP gives the best machine set for each flow count; the PS goes in the rack.
	racks := w.racksBy(func(a, b int) bool { return w.rackFree[a] < w.rackFree[b] }, func(r int) bool { return w.rackFree[r] >= g })
	for _, r := range racks[:min(len(racks), singleRackCandidates)] {
		dp := w.newRackDP(r, g, d)
		for n := 1; n < len(dp.val); n++ {
			if ws := dp.workers(n, g); ws != nil {
				consider(ws, w.psCandidates(ws, []int{r}, d))
			}
		}
	}
	if bestP.Job == nil || bestPred.flow < d*(1-1e-9) || bestPred.harm > 0 {
		if ws, rs := w.multiRack(g, d); ws != nil {
			consider(ws, w.psCandidates(ws, rs, d))
		}
	}
	if bestP.Job == nil {
		// More GPUs than the DP's candidate machines hold: spread over the fullest machines.
		if ws := spreadFullest(w.free, g); ws != nil {
			return Placement{Job: j, Workers: ws, PS: ws[0].Machine, INA: !w.noINA}, true
		}
	}
	return bestP, bestP.Job != nil
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
	var ws []Worker
	for _, m := range order {
		if g == 0 {
			break
		}
		t := min(free[m], g)
		ws = append(ws, Worker{Machine: m, GPUs: t})
		g -= t
	}
	if g > 0 {
		return nil
	}
	sortWorkers(ws)
	return ws
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
// the machine with the most spare NIC in each worker rack.
func (w *npWork) psCandidates(ws []Worker, racks []int, d float64) []MachineID {
	order := slices.Clone(ws)
	slices.SortStableFunc(order, func(a, b Worker) int { return b.GPUs - a.GPUs })
	var out []MachineID
	for _, wk := range order[:min(len(order), psWorkerCandidates)] {
		out = append(out, wk.Machine)
	}
	for _, r := range racks {
		rk := &w.c.Racks[r]
		best, bestSpare := MachineID(-1), math.Inf(-1)
		for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
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
