package netpack

import "slices"

// fragPrice prices the GPU fragmentation a placement leaves for the jobs that will queue, in
// GPUs, the unit of a placement's value (GPUs x flow / d). Fragmentation of a free-GPU shape is
// the expected number of free GPUs a job drawn from the demand cannot use without spreading over
// more machines or racks than it must (after Weng et al., "Beware of Fragmentation", ATC'23, one
// level up for jobs larger than a machine):
//
//	F = Σ_s w(s) · ( Σ_m free_m·[free_m < s]  if s fits a machine,
//	                 Σ_r free_r·[free_r < s]  if s fits a rack but no machine )
//
// with w(s) the share of the GPUs in demand that come in jobs of s GPUs. The demand is the GPUs
// of the jobs running now (GPUs freed by finishing jobs are asked for again by jobs like them),
// of the jobs waiting in the round's queue (asking now) and of the job being placed. A placement
// is charged F after it minus F before it, so filling a fragment (best fit) is rewarded and
// breaking a block that the queue's large jobs need costs the GPUs it strands. Jobs larger than
// a rack span racks whatever is left, so they add nothing.
type fragPrice struct {
	sizes []int     // distinct job sizes in demand, ascending
	gpus  []float64 // GPUs in demand per size (not yet normalised by total)
	total float64
	// queued are the ids of the waiting jobs counted in demand; one placed in the round is
	// not counted again.
	queued map[string]bool
}

// begin takes the demand of the running jobs, from the estimator that mirrors them (its GPUs by
// size: a round costs the distinct sizes, not the jobs), and of the waiting jobs.
func (f *fragPrice) begin(e *Estimator, waiting []*Job) {
	f.sizes, f.gpus, f.total = f.sizes[:0], f.gpus[:0], 0
	for g := range e.sizeGPUs {
		f.sizes = append(f.sizes, g)
	}
	slices.Sort(f.sizes)
	for _, g := range f.sizes {
		f.gpus = append(f.gpus, float64(e.sizeGPUs[g]))
		f.total += float64(e.sizeGPUs[g])
	}
	if f.queued == nil {
		f.queued = map[string]bool{}
	}
	clear(f.queued)
	for _, j := range waiting {
		if j != nil && j.GPUs > 0 && !f.queued[j.ID] {
			f.queued[j.ID] = true
			f.add(j.GPUs)
		}
	}
}

// add puts one more job of g GPUs in demand (one placed earlier in the round).
func (f *fragPrice) add(g int) {
	i, found := slices.BinarySearch(f.sizes, g)
	if !found {
		f.sizes = slices.Insert(f.sizes, i, g)
		f.gpus = slices.Insert(f.gpus, i, 0)
	}
	f.gpus[i] += float64(g)
	f.total += float64(g)
}

// level is Σ_s w(s)·free·[free < s] over the sizes s in (lo, hi]: the fragmentation of one machine
// (lo = 0, hi = its GPUs) or one rack (lo = GPUs per machine, hi = the rack's GPUs) with free
// GPUs, weighted as if the job of g GPUs being placed were in demand too.
func (f *fragPrice) level(free, lo, hi, g int) float64 {
	if free <= 0 {
		return 0
	}
	w := 0.0
	for i, s := range f.sizes {
		if s > lo && s <= hi && free < s {
			w += f.gpus[i]
		}
	}
	if g > lo && g <= hi && free < g {
		w += float64(g)
	}
	return float64(free) * w / (f.total + float64(g))
}

// fragDelta is F after placing ws (a job of g GPUs) minus F before, on the round's free GPUs.
// Workers come in machine order and racks tile the machines, so a rack's workers are adjacent.
func (w *npWork) fragDelta(ws []Worker, g int) float64 {
	f, c := w.frag, w.c
	d, taken := 0.0, 0
	for i, wk := range ws {
		m := &c.Machines[wk.Machine]
		fm := w.free[wk.Machine]
		d += f.level(fm-wk.GPUs, 0, m.GPUs, g) - f.level(fm, 0, m.GPUs, g)
		if taken += wk.GPUs; i+1 < len(ws) && c.Machines[ws[i+1].Machine].Rack == m.Rack {
			continue
		}
		fr, capR := w.rackFree[m.Rack], w.rackGPUs[m.Rack]
		d += f.level(fr-taken, m.GPUs, capR, g) - f.level(fr, m.GPUs, capR, g)
		taken = 0
	}
	return d
}
