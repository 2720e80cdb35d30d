package netpack

import (
	"math"
	"sort"
)

// esaPriority is the ESA priority cap of a job: smaller total work (iterations × gradient bytes)
// gets a higher priority, so on slot contention the job closest to finishing wins (shortest
// remaining work first, which lowers average JCT). Logarithmic buckets keep it stable:
// 255 − round(24·log10(1 + WorkBytes/1e6)), clamped to 1..255.
func esaPriority(j *Job) uint8 {
	p := 255 - math.Round(24*math.Log10(1+j.WorkBytes()/1e6))
	return uint8(math.Max(1, math.Min(255, p)))
}

// ESAPriority exposes the priority rule for other schedulers and the simulator.
func ESAPriority(j *Job) uint8 { return esaPriority(j) }

// enableINA decides which newly placed jobs aggregate in their ToRs. Candidates are ranked by
// predicted flow × fan-in (the bytes/s INA removes from the network). Down the list a job keeps INA
// while every ToR it aggregates at still has INA capacity (memory / RTT, less what running INA jobs
// use and what jobs enabled before it need) for its flow. Once memory is spent, statistical sharing
// still lets a job aggregate part of its traffic at the cost of others' shares, so the job keeps INA
// only if the joint estimate of its neighbourhood (the jobs sharing a resource with it) is at least
// as good with INA as without; otherwise it runs without INA. In Separate mode memory spent means
// no INA.
func (w *npWork) enableINA(placed []Placement) {
	e := w.est
	type cand struct {
		i     int
		flow  float64
		fanIn int
		racks []int
	}
	var cs []cand
	budget := map[int]float64{}
	inBatch := map[string]bool{}
	for i := range placed {
		inBatch[placed[i].Job.ID] = true
	}
	for i := range placed {
		j := e.jobs[placed[i].Job.ID]
		if j == nil || len(j.inaRacks) == 0 {
			continue
		}
		fan := 0
		for _, u := range j.uses {
			if e.x.isINA(u.res) {
				continue
			}
			if u.inaSlot >= 0 && u.res == e.x.nic(j.p.PS) {
				fan += int(u.kF)
			}
		}
		cs = append(cs, cand{i, j.f, fan, j.inaRacks})
		for _, r := range j.inaRacks {
			budget[r] = 0
		}
	}
	if len(cs) == 0 {
		return
	}
	for r := range budget {
		res := e.x.ina(r)
		used := 0.0
		for _, k := range e.users[res] {
			if !inBatch[k.p.Job.ID] {
				used += e.levelOn(k, res)
			}
		}
		budget[r] = e.cap[res] - used
	}
	sort.SliceStable(cs, func(a, b int) bool {
		return cs[a].flow*float64(cs[a].fanIn) > cs[b].flow*float64(cs[b].fanIn)
	})
	for _, c := range cs {
		ok := true
		for _, r := range c.racks {
			if budget[r] < c.flow*(1-1e-9) {
				ok = false
			}
		}
		if ok {
			for _, r := range c.racks {
				budget[r] -= c.flow
			}
			continue
		}
		p := &placed[c.i]
		if e.mode == Separate {
			// Separate budgets: memory spent means no INA.
			e.Remove(p.Job.ID)
			p.INA = false
			_ = e.Add(*p) // the same placement without INA: valid
			continue
		}
		near := e.neighbourhood(p.Job.ID)
		with := e.speedSum(near)
		e.Remove(p.Job.ID)
		off := *p
		off.INA = false
		_ = e.Add(off) // the same placement without INA: valid
		if e.speedSum(near) >= with*(1+1e-9) {
			p.INA = false
			continue
		}
		e.Remove(p.Job.ID)
		_ = e.Add(*p)
	}
}

// neighbourhood lists the jobs that share a resource with a job (the job included).
func (e *Estimator) neighbourhood(id string) []string {
	j := e.jobs[id]
	seen := map[*ejob]bool{}
	var out []string
	e.eachRes(j, func(r int32) {
		for _, k := range e.users[r] {
			if !seen[k] {
				seen[k] = true
				out = append(out, k.p.Job.ID)
			}
		}
	})
	return out
}

// speedSum is Σ GPUs × flow / compute-bound flow over the listed jobs.
func (e *Estimator) speedSum(ids []string) float64 {
	s := 0.0
	for _, id := range ids {
		if j := e.jobs[id]; j != nil {
			s += float64(j.p.Job.GPUs) * math.Min(1, j.f/j.p.Job.Model.scoreDemand())
		}
	}
	return s
}
