package netpack

import "math"

// multiRack spreads a job over racks: per candidate rack the in-rack DP gives, for every GPU count,
// the best flow count after charging the rack's uplink for the streams it must carry; a DP over
// racks then picks GPUs per rack. Returns workers and the racks used.
func (w *npWork) multiRack(g int, d float64) ([]Worker, []int) {
	racks := w.racksBy(func(a, b int) bool { return w.rackFree[a] > w.rackFree[b] }, func(r int) bool { return w.rackFree[r] > 0 })
	racks = racks[:min(len(racks), multiRackCandidates)]
	type opt struct {
		v float64
		n int
	}
	dps := make([]*rackDP, len(racks))
	opts := make([][]opt, len(racks)) // opts[i][k]: best flows for k GPUs in rack i
	for i, r := range racks {
		dps[i] = w.newRackDP(r, g, d)
		opts[i] = make([]opt, g+1)
		upl := w.est.x.uplink(r)
		spare := math.Max(0, w.est.cap[upl]-w.est.load[upl])
		inaOK := !w.noINA && w.c.Racks[r].INAMemoryBytes > 0
		for k := 1; k <= g; k++ {
			opts[i][k] = opt{math.Inf(-1), 0}
			for n := 1; n < len(dps[i].val); n++ {
				v := dps[i].val[n][k]
				if math.IsInf(v, -1) {
					continue
				}
				o := float64(n)
				if inaOK && n >= 2 && n <= 32 {
					o = 1
				}
				v -= math.Max(0, o*d-spare) / d // the harm to the uplink's jobs
				if !w.v1 && w.est.cap[upl] > 0 {
					// and the share of it used, as predict charges them: otherwise a rack more
					// costs nothing while the uplinks have room.
					v -= o * d / w.est.cap[upl]
				}
				if v > opts[i][k].v {
					opts[i][k] = opt{v, n}
				}
			}
		}
	}
	// best[i][k]: best value placing k GPUs in racks 0..i-1; from[i][k]: GPUs given to rack i-1.
	best := make([][]float64, len(racks)+1)
	from := make([][]int, len(racks)+1)
	for i := range best {
		best[i] = make([]float64, g+1)
		from[i] = make([]int, g+1)
		for k := range best[i] {
			best[i][k] = math.Inf(-1)
		}
	}
	best[0][0] = 0
	for i := range racks {
		for k := 0; k <= g; k++ {
			best[i+1][k], from[i+1][k] = best[i][k], 0
			for t := 1; t <= k; t++ {
				if v := best[i][k-t] + opts[i][t].v; v > best[i+1][k]+1e-12 {
					best[i+1][k], from[i+1][k] = v, t
				}
			}
		}
	}
	if math.IsInf(best[len(racks)][g], -1) {
		return nil, nil
	}
	var ws []Worker
	var used []int
	k := g
	for i := len(racks); i > 0; i-- {
		t := from[i][k]
		if t == 0 {
			continue
		}
		part := dps[i-1].workers(opts[i-1][t].n, t)
		if part == nil {
			return nil, nil
		}
		ws = append(ws, part...)
		used = append(used, racks[i-1])
		k -= t
	}
	sortWorkers(ws)
	return ws, used
}
