package netpack

import (
	"math"
	"slices"
)

// Baselines, as in the paper's comparison: INA enabled for every job but ignored when placing.
// Admission and ESA priority are not theirs to choose: every policy gets the same ones (Compose).
// Each differs from the others only in how it picks machines and the PS; the PS is put where the
// baseline's own rule would put it among the machines of its workers' racks (a single-machine job
// keeps its PS on its machine: no baseline would send traffic it can avoid).
func init() {
	register("gpu-balance", func(o Options) Placer {
		return &baseline{name: "gpu-balance", opt: o, place: gpuBalance, ps: psOnLargestWorker}
	})
	register("flow-balance", func(o Options) Placer {
		return &baseline{name: "flow-balance", opt: o, place: flowBalance, ps: psFewestFlows}
	})
	register("min-frag", func(o Options) Placer {
		return &baseline{name: "min-frag", opt: o, place: minFrag, ps: psOnLargestWorker}
	})
	register("tetris", func(o Options) Placer {
		return &baseline{name: "tetris", opt: o, place: tetris, ps: psMostSpareBandwidth}
	})
	register("gandiva", func(o Options) Placer {
		return &baseline{name: "gandiva", opt: o, place: consolidate, ps: psOnLargestWorker}
	})
}

type baseline struct {
	name  string
	opt   Options
	place func(w *blWork, j *Job) []Worker
	ps    func(w *blWork, ws []Worker) MachineID
	w     *blWork
}

// blWork is what the baselines see: free GPUs, and per machine NIC the number of streams ending
// there and the sum of their compute-bound demands (bytes/s), as a scheduler that knows the jobs'
// profiles but not the network equilibrium would.
type blWork struct {
	c        *Cluster
	st       *State
	free     []int
	freeSum  int
	flows    []int
	demand   []float64
	rackFree []int
}

func (b *baseline) Name() string { return b.name }

func (b *baseline) Begin(st *State) {
	w := &blWork{c: st.Cluster, st: st, free: slices.Clone(st.free), freeSum: st.freeSum, flows: make([]int, len(st.free)),
		demand: make([]float64, len(st.free)), rackFree: make([]int, len(st.Cluster.Racks))}
	for m, f := range w.free {
		w.rackFree[st.Cluster.Machines[m].Rack] += f
	}
	for i := range st.Running {
		w.addTraffic(&st.Running[i])
	}
	b.w = w
}

func (b *baseline) Place(j *Job) (Placement, bool) {
	w := b.w
	if !placeable(w.st, j, w.freeSum) {
		return Placement{}, false
	}
	ws := b.place(w, j)
	if ws == nil {
		return Placement{}, false
	}
	sortWorkers(ws)
	ps := ws[0].Machine
	if len(ws) > 1 {
		ps = b.ps(w, ws)
	}
	p := Placement{Job: j, Workers: ws, PS: ps, INA: !b.opt.NoINA}
	for _, wk := range ws {
		w.free[wk.Machine] -= wk.GPUs
		w.rackFree[w.c.Machines[wk.Machine].Rack] -= wk.GPUs
	}
	w.freeSum -= j.GPUs
	w.addTraffic(&p)
	return p, true
}

func (b *baseline) End(placed []Placement) []Placement {
	b.w = nil
	return placed
}

// placeable reports whether a placer may try j now: a valid job, not running, no larger than
// the GPUs still free in the round.
func placeable(st *State, j *Job, free int) bool {
	if j == nil || j.Validate(nil) != nil || j.GPUs > free {
		return false
	}
	_, running := st.index[j.ID]
	return !running
}

func (w *blWork) addTraffic(p *Placement) {
	d := p.Job.Model.scoreDemand()
	for _, wk := range p.Workers {
		if wk.Machine != p.PS {
			w.flows[wk.Machine]++
			w.flows[p.PS]++
			w.demand[wk.Machine] += d
			w.demand[p.PS] += d
		}
	}
}

// takeInOrder takes min(free, what is still needed) GPUs from machines in the given order, until
// g are taken; the workers come back in machine order, or nil if the machines lack g GPUs.
func takeInOrder(free []int, order []MachineID, g int) []Worker {
	var ws []Worker
	for _, m := range order {
		if g == 0 {
			break
		}
		if t := min(free[m], g); t > 0 {
			ws = append(ws, Worker{Machine: m, GPUs: t})
			g -= t
		}
	}
	if g > 0 {
		return nil
	}
	sortWorkers(ws)
	return ws
}

func (w *blWork) machinesWithFree() []MachineID {
	var ms []MachineID
	for m, f := range w.free {
		if f > 0 {
			ms = append(ms, MachineID(m))
		}
	}
	return ms
}

// gpuBalance gives the job one GPU at a time, each to the machine with the most free GPUs left
// (ties: lowest id): processors stay evenly loaded, jobs spread.
func gpuBalance(w *blWork, j *Job) []Worker {
	ms := w.machinesWithFree()
	left := make(map[MachineID]int, j.GPUs)
	h := &freeHeap{free: w.free, left: left, ms: ms}
	h.init()
	for g := 0; g < j.GPUs; g++ {
		m, ok := h.popMax()
		if !ok {
			return nil
		}
		left[m]++
		h.push(m)
	}
	var ws []Worker
	for m, t := range left {
		ws = append(ws, Worker{Machine: m, GPUs: t})
	}
	return ws
}

// flowBalance fills machines whose NICs end the fewest streams first (ties: most free GPUs).
func flowBalance(w *blWork, j *Job) []Worker {
	ms := w.machinesWithFree()
	slices.SortStableFunc(ms, func(a, b MachineID) int {
		if w.flows[a] != w.flows[b] {
			return w.flows[a] - w.flows[b]
		}
		return w.free[b] - w.free[a]
	})
	return takeInOrder(w.free, ms, j.GPUs)
}

// minFrag is best fit: the machine with the fewest free GPUs that holds the job, else machines
// with the fewest free GPUs first, so whole machines stay free.
func minFrag(w *blWork, j *Job) []Worker {
	ms := w.machinesWithFree()
	slices.SortStableFunc(ms, func(a, b MachineID) int { return w.free[a] - w.free[b] })
	for _, m := range ms {
		if w.free[m] >= j.GPUs {
			return []Worker{{Machine: m, GPUs: j.GPUs}}
		}
	}
	return takeInOrder(w.free, ms, j.GPUs)
}

// tetris is multi-resource packing after Grandl et al. (SIGCOMM'14): repeatedly pick the machine
// whose free resources best align with the job's demand there, alignment being the dot product of
// the normalised demand vector (GPUs taken, one stream's bandwidth) and the machine's normalised
// free vector (free GPUs, NIC capacity not yet promised to streams).
func tetris(w *blWork, j *Job) []Worker {
	d := j.Model.scoreDemand()
	g := j.GPUs
	taken := map[MachineID]bool{}
	var ws []Worker
	for g > 0 {
		best, bestS := MachineID(-1), math.Inf(-1)
		for m, f := range w.free {
			if f == 0 || taken[MachineID(m)] {
				continue
			}
			mc := &w.c.Machines[m]
			nic := mc.NICGbps * 1e9 / 8
			t := float64(min(f, g))
			s := t/float64(mc.GPUs)*float64(f)/float64(mc.GPUs) + math.Min(1, d/nic)*math.Max(0, nic-w.demand[m])/nic
			if s > bestS {
				best, bestS = MachineID(m), s
			}
		}
		if best < 0 {
			return nil
		}
		t := min(w.free[best], g)
		ws = append(ws, Worker{Machine: best, GPUs: t})
		taken[best] = true
		g -= t
	}
	return ws
}

// bestFit is the machine with the fewest free GPUs that still holds g (lowest id on ties), or -1.
func bestFit(free []int, g int) MachineID {
	best := MachineID(-1)
	for m, f := range free {
		if f >= g && (best < 0 || f < free[best]) {
			best = MachineID(m)
		}
	}
	return best
}

// consolidate follows Gandiva (Xiao et al., OSDI'18) and Tiresias (Gu et al., NSDI'19): pack a job
// onto as few machines and racks as possible (packLocal).
func consolidate(w *blWork, j *Job) []Worker { return packLocal(w.c, w.free, w.rackFree, j.GPUs) }

// packLocal places g GPUs on as few machines and racks as possible: the best-fit machine, else
// the best-fit rack that holds them (machines with most free GPUs first), else racks with the
// most free GPUs first. Nil when the free GPUs do not hold g.
func packLocal(c *Cluster, free, rackFree []int, g int) []Worker {
	best := bestFit(free, g)
	if best >= 0 {
		return []Worker{{Machine: best, GPUs: g}}
	}
	rack := -1
	for r, f := range rackFree {
		if f >= g && (rack < 0 || f < rackFree[rack]) {
			rack = r
		}
	}
	var racks []int
	if rack >= 0 {
		racks = []int{rack}
	} else {
		for r := range c.Racks {
			racks = append(racks, r)
		}
		slices.SortStableFunc(racks, func(a, b int) int { return rackFree[b] - rackFree[a] })
	}
	var order []MachineID
	for _, r := range racks {
		rk := &c.Racks[r]
		var ms []MachineID
		for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
			if free[m] > 0 {
				ms = append(ms, m)
			}
		}
		slices.SortStableFunc(ms, func(a, b MachineID) int { return free[b] - free[a] })
		order = append(order, ms...)
	}
	return takeInOrder(free, order, g)
}

func psOnLargestWorker(_ *blWork, ws []Worker) MachineID {
	best := ws[0]
	for _, wk := range ws[1:] {
		if wk.GPUs > best.GPUs {
			best = wk
		}
	}
	return best.Machine
}

// workerRackMachines lists every machine in the racks of ws, in id order.
func (w *blWork) workerRackMachines(ws []Worker) []MachineID {
	var out []MachineID
	last := -1
	for _, wk := range ws {
		r := w.c.Machines[wk.Machine].Rack
		if r == last {
			continue
		}
		last = r
		rk := &w.c.Racks[r]
		for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
			out = append(out, m)
		}
	}
	return out
}

// psFewestFlows is flow-balance's rule for the PS: among the machines of the workers' racks,
// the one whose NIC ends the fewest streams (a worker machine on ties: it saves a stream).
func psFewestFlows(w *blWork, ws []Worker) MachineID {
	return w.bestPSIn(ws, func(m MachineID) float64 { return -float64(w.flows[m]) })
}

// psMostSpareBandwidth is tetris's rule for the PS: among the machines of the workers' racks,
// the one with the most NIC bandwidth not yet promised to streams (a worker machine on ties).
func psMostSpareBandwidth(w *blWork, ws []Worker) MachineID {
	return w.bestPSIn(ws, func(m MachineID) float64 { return w.c.Machines[m].NICGbps*1e9/8 - w.demand[m] })
}

// bestPSIn is the machine of the workers' racks with the highest score; ties go to a worker
// machine, then the lowest id.
func (w *blWork) bestPSIn(ws []Worker, score func(MachineID) float64) MachineID {
	isWorker := func(m MachineID) bool {
		_, ok := slices.BinarySearchFunc(ws, m, func(x Worker, m MachineID) int { return int(x.Machine) - int(m) })
		return ok
	}
	best, bestS, bestW := MachineID(-1), math.Inf(-1), false
	for _, m := range w.workerRackMachines(ws) {
		s, wk := score(m), isWorker(m)
		if s > bestS || (s == bestS && wk && !bestW) {
			best, bestS, bestW = m, s, wk
		}
	}
	return best
}
