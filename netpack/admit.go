package netpack

import (
	"math"
	"sort"
)

// knapsackLimit bounds items × capacity cells of the admission DP; beyond it admission is greedy
// by value density (documented in README).
const knapsackLimit = 20_000_000

// admitKnapsack picks the subset of waiting jobs to start now: the most valuable set whose GPUs fit
// the free GPUs (0/1 knapsack by dynamic programming). Jobs that can never fit the cluster are left
// out. value[i] is the job's value; when every job fits, all are admitted.
func admitKnapsack(st *State, waiting []*Job, value func(i int) float64) []int {
	free := st.TotalFreeGPUs()
	var items []int
	sum := 0
	for _, i := range eligible(st, waiting) {
		items = append(items, i)
		sum += waiting[i].GPUs
	}
	if sum <= free {
		return items
	}
	g := free
	for _, i := range items {
		g = gcd(g, waiting[i].GPUs)
	}
	capU := free / g
	if len(items)*(capU+1) > knapsackLimit {
		return admitGreedy(waiting, items, free, value)
	}
	// best[c] = best value with capacity c; keep[i][c] records whether item i is taken at c.
	best := make([]float64, capU+1)
	keep := make([][]bool, len(items))
	for n, i := range items {
		w := waiting[i].GPUs / g
		v := value(i)
		keep[n] = make([]bool, capU+1)
		for c := capU; c >= w; c-- {
			if cand := best[c-w] + v; cand > best[c]+1e-12*math.Abs(cand) {
				best[c] = cand
				keep[n][c] = true
			}
		}
	}
	var out []int
	c := capU
	for n := len(items) - 1; n >= 0; n-- {
		if keep[n][c] {
			out = append(out, items[n])
			c -= waiting[items[n]].GPUs / g
		}
	}
	sort.Ints(out)
	return out
}

func admitGreedy(waiting []*Job, items []int, free int, value func(i int) float64) []int {
	order := append([]int(nil), items...)
	sort.SliceStable(order, func(a, b int) bool {
		return value(order[a])/float64(waiting[order[a]].GPUs) > value(order[b])/float64(waiting[order[b]].GPUs)
	})
	var out []int
	for _, i := range order {
		if waiting[i].GPUs <= free {
			out = append(out, i)
			free -= waiting[i].GPUs
		}
	}
	sort.Ints(out)
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// eligible lists the waiting jobs a policy may start now: valid, not running, not listed twice,
// and no larger than the free GPUs. Others are skipped, never placed (callers report invalid jobs
// with Job.Validate).
func eligible(st *State, waiting []*Job) []int {
	free := st.TotalFreeGPUs()
	seen := make(map[string]bool, len(waiting))
	var out []int
	for i, j := range waiting {
		if j == nil || j.GPUs > free || j.Validate(nil) != nil || seen[j.ID] {
			continue
		}
		seen[j.ID] = true
		if _, running := st.index[j.ID]; !running {
			out = append(out, i)
		}
	}
	return out
}

// admitFIFO is the baselines' admission: in queue order, start every job that fits the free GPUs
// now (first fit with backfilling); jobs that can never fit are left out.
func admitFIFO(st *State, waiting []*Job) []*Job {
	free := st.TotalFreeGPUs()
	var out []*Job
	for _, i := range eligible(st, waiting) {
		if j := waiting[i]; j.GPUs <= free {
			out = append(out, j)
			free -= j.GPUs
		}
	}
	return out
}
