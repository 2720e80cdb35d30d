package netpack

import (
	"math"
	"slices"
)

// The worker DP of one rack considers its best machines: at least maxDPMachines of them, and
// always enough to hold the job on the fewest machines plus dpSlack more (a job needing more than
// 16 machines' GPUs must still fit one rack when the rack has room). dpCellBudget bounds
// machines x flows x GPUs x GPUs-per-machine; a rack whose DP would exceed it offers only the
// packed machine set (fullest first).
const (
	maxDPMachines = 16
	dpSlack       = 4
	dpCellBudget  = 20_000_000
)

// fragmentCost is added to a machine's DP cost when the job leaves some of its GPUs free: a
// tie-breaker against fragments, small next to a stream's cost.
const fragmentCost = 0.01

// rackDP is the worker-placement DP inside one rack: over its best machines, the best total value
// for every (flows placed, GPUs placed). A flow is one worker machine; a machine's value is minus
// its cost 1 − (got − taken)/d + got/cap for one more stream on its NIC (shareOf): a stream costs
// at least the NIC share it consumes, and a NIC already carrying heavy streams costs more (the
// hotspot penalty), so the DP prefers few streams on quiet machines.
type rackDP struct {
	ms   []MachineID
	val  [][]float64 // val[n][k]; -Inf when infeasible
	take [][][]uint16
	g    int
	// packed: no search; (n, k) is the first n machines of ms, the last holding what is left of k.
	packed bool
	frees  []int // with packed: free GPUs of ms
}

func (w *npWork) newRackDP(rack int, g int, d float64) *rackDP {
	rk := &w.c.Racks[rack]
	type cand struct {
		m     MachineID
		free  int
		score float64
	}
	var cs []cand
	for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
		if f := w.free[m]; f > 0 {
			r := w.est.x.nic(m)
			got, taken := w.est.shareOf(r, 1, d)
			cs = append(cs, cand{m, f, -(1 - (got-taken)/d + got/w.est.cap[r])})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.free != b.free {
			return b.free - a.free
		}
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.m) - int(b.m)
	})
	// need: machines that hold g GPUs when the fullest are taken first (cs is sorted that way).
	need, held, maxFree := len(cs), 0, 0
	for i, c := range cs {
		maxFree = max(maxFree, c.free)
		if held += c.free; held >= g {
			need = i + 1
			break
		}
	}
	L := min(len(cs), max(maxDPMachines, need+dpSlack))
	if L*L*g*min(maxFree, g) > dpCellBudget {
		// Too large to search: for every k, the k GPUs of the fullest machines.
		dp := &rackDP{g: g, val: make([][]float64, need+1), packed: true}
		for n := range dp.val {
			dp.val[n] = make([]float64, g+1)
			for k := range dp.val[n] {
				dp.val[n][k] = math.Inf(-1)
			}
		}
		dp.val[0][0] = 0
		k, v := 0, 0.0
		for n, c := range cs[:need] {
			dp.ms = append(dp.ms, c.m)
			dp.frees = append(dp.frees, c.free)
			for t := 1; t <= c.free && k+t <= g; t++ {
				vt := v + c.score
				if t < c.free {
					vt -= fragmentCost
				}
				dp.val[n+1][k+t] = vt
			}
			k += c.free
			v += c.score
		}
		return dp
	}
	cs = cs[:L]
	dp := &rackDP{g: g, val: make([][]float64, L+1), take: make([][][]uint16, L)}
	for n := range dp.val {
		dp.val[n] = make([]float64, g+1)
		for k := range dp.val[n] {
			dp.val[n][k] = math.Inf(-1)
		}
	}
	dp.val[0][0] = 0
	for i, c := range cs {
		dp.ms = append(dp.ms, c.m)
		dp.take[i] = make([][]uint16, L+1)
		for n := i + 1; n >= 1; n-- {
			row := make([]uint16, g+1)
			dp.take[i][n] = row
			prev, cur := dp.val[n-1], dp.val[n]
			for k := g; k >= 1; k-- {
				for t := 1; t <= min(c.free, k); t++ {
					if math.IsInf(prev[k-t], -1) {
						continue
					}
					v := prev[k-t] + c.score
					if t < c.free {
						v -= fragmentCost
					}
					if v > cur[k]+1e-12 {
						cur[k] = v
						row[k] = uint16(t)
					}
				}
			}
		}
	}
	return dp
}

// workers reconstructs the machines for (n flows, k GPUs); nil if infeasible.
func (dp *rackDP) workers(n, k int) []Worker {
	if n >= len(dp.val) || k > dp.g || math.IsInf(dp.val[n][k], -1) {
		return nil
	}
	var out []Worker
	if dp.packed {
		for i := 0; i < n; i++ {
			t := min(dp.frees[i], k)
			out = append(out, Worker{Machine: dp.ms[i], GPUs: t})
			k -= t
		}
		sortWorkers(out)
		return out
	}
	// Walk items backwards: the last item that improved (n, k) set its final value, and the state
	// it extended, (n−1, k−t), was final for the items before it.
	for i := len(dp.ms) - 1; i >= 0 && n > 0; i-- {
		if t := dp.choice(i, n, k); t > 0 {
			out = append(out, Worker{Machine: dp.ms[i], GPUs: t})
			n--
			k -= t
		}
	}
	if n != 0 || k != 0 {
		return nil
	}
	sortWorkers(out)
	return out
}

// choice is the GPUs item i put in (n, k) when it improved that state, or 0 if it did not.
func (dp *rackDP) choice(i, n, k int) int {
	if row := dp.take[i][n]; row != nil {
		return int(row[k])
	}
	return 0
}
