package netpack

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Admission decides which waiting jobs a policy tries to start now, and in which order. It is
// separate from placement so that every policy can be run with the same admission rule.
type Admission interface {
	Name() string
	// Admit returns indexes into waiting of the jobs to try now, in the order to place them;
	// together they fit st's free GPUs. Jobs left out keep waiting. It never modifies st.
	Admit(st *State, waiting []*Job) []int
}

// Admission rules by name.
const (
	AdmitFIFO     = "fifo"     // queue order with backfilling (default)
	AdmitKnapsack = "knapsack" // NetPack's 0/1 knapsack over the free GPUs
)

// AdmissionNames lists the admission rules NewAdmission knows.
func AdmissionNames() []string { return []string{AdmitFIFO, AdmitKnapsack} }

// NewAdmission builds an admission rule by name ("" is AdmitFIFO). o.NoINA and o.Mode matter
// only to the knapsack, which predicts speed with netpack's estimator.
func NewAdmission(name string, o Options) (Admission, error) {
	switch name {
	case "", AdmitFIFO:
		return fifo{}, nil
	case AdmitKnapsack:
		return &knapsack{t: tracker{mode: Joint}, noINA: o.NoINA}, nil
	}
	return nil, fmt.Errorf("unknown admission %q (have %v)", name, AdmissionNames())
}

// fifo admits in queue order every job that fits the GPUs still free (first fit with
// backfilling: a job too large for now does not hold back smaller ones behind it).
type fifo struct{}

func (fifo) Name() string { return AdmitFIFO }

func (fifo) Admit(st *State, waiting []*Job) []int {
	free := st.TotalFreeGPUs()
	var out []int
	for _, i := range eligible(st, waiting) {
		if g := waiting[i].GPUs; g <= free {
			out = append(out, i)
			free -= g
		}
	}
	return out
}

// knapsack is NetPack's admission: the most valuable set of waiting jobs that fits the free GPUs
// (0/1 knapsack by dynamic programming, weights = GPUs compressed by their gcd), placed in queue
// order. Value v_j = ρ_j · (1 + (N − i)/N): every started job stops accruing queueing time, so
// each is worth one, discounted by ρ_j, the fraction of its compute-bound speed it can reach on
// the network as it is now, and weighted up to 2x by queue position i (against starvation).
// ρ_j is 1 for a job that fits one machine's free GPUs; otherwise it is the estimator's
// prediction for the job packed into the rack with the most free GPUs (machines with most free
// GPUs first, PS on the largest worker, INA on unless disabled): flow / compute-bound flow. The
// estimator is the same for every policy, so the rule is too.
type knapsack struct {
	t     tracker
	noINA bool
}

func (k *knapsack) Name() string { return AdmitKnapsack }

// knapsackLimit bounds items × capacity cells of the admission DP; beyond it admission is greedy
// by value density (documented in README).
const knapsackLimit = 20_000_000

func (k *knapsack) Admit(st *State, waiting []*Job) []int {
	items := eligible(st, waiting)
	free := st.TotalFreeGPUs()
	sum := 0
	for _, i := range items {
		sum += waiting[i].GPUs
	}
	if sum <= free {
		return items
	}
	k.t.sync(st)
	maxFree := 0
	for _, f := range st.free {
		maxFree = max(maxFree, f)
	}
	n := float64(len(waiting))
	value := func(i int) float64 {
		rho := 1.0
		if j := waiting[i]; j.GPUs > maxFree {
			rho = k.speed(st, j)
		}
		return rho * (1 + (n-float64(i))/n)
	}
	vals := make(map[int]float64, len(items))
	for _, i := range items {
		vals[i] = value(i)
	}
	return solveKnapsack(waiting, items, free, func(i int) float64 { return vals[i] })
}

// speed is ρ_j for a job that needs more than one machine (see knapsack).
func (k *knapsack) speed(st *State, j *Job) float64 {
	ws := packedWorkers(st, j.GPUs)
	if ws == nil {
		return 0
	}
	ps := ws[0]
	for _, w := range ws {
		if w.GPUs > ps.GPUs {
			ps = w
		}
	}
	p := Placement{Job: j, Workers: ws, PS: ps.Machine, INA: !k.noINA}
	pr := k.t.est.predict(&p)
	return math.Min(1, pr.flow/j.Model.scoreDemand())
}

// packedWorkers takes g GPUs from the rack with the most free GPUs, machines with most free
// GPUs first, spilling into the next racks in the same order; nil if the cluster lacks them.
func packedWorkers(st *State, g int) []Worker {
	c := st.Cluster
	rackFree := make([]int, len(c.Racks))
	for m, f := range st.free {
		rackFree[c.Machines[m].Rack] += f
	}
	racks := make([]int, len(c.Racks))
	for r := range racks {
		racks[r] = r
	}
	slices.SortStableFunc(racks, func(a, b int) int { return rackFree[b] - rackFree[a] })
	var order []MachineID
	held := 0
	for _, r := range racks {
		if rackFree[r] == 0 || held >= g {
			break
		}
		held += rackFree[r]
		rk := &c.Racks[r]
		ms := make([]MachineID, 0, rk.Count)
		for m := rk.First; m < rk.First+MachineID(rk.Count); m++ {
			if st.free[m] > 0 {
				ms = append(ms, m)
			}
		}
		slices.SortStableFunc(ms, func(a, b MachineID) int { return st.free[b] - st.free[a] })
		order = append(order, ms...)
	}
	return takeInOrder(st.free, order, g)
}

// solveKnapsack picks the subset of items (indexes into waiting) with the largest total value
// whose GPUs fit free, returned in queue order.
func solveKnapsack(waiting []*Job, items []int, free int, value func(i int) float64) []int {
	g := free
	for _, i := range items {
		g = gcd(g, waiting[i].GPUs)
	}
	if g == 0 {
		return nil
	}
	capU := free / g
	if len(items)*(capU+1) > knapsackLimit {
		return admitGreedy(waiting, items, free, value)
	}
	// best[c] = best value with capacity c; keep[n][c] records whether item n is taken at c.
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
