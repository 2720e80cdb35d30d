package netpack

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func randomJobs(rng *rand.Rand, n int, prefix string) []*Job {
	names := ProfileNames()
	sizes := []int{1, 1, 1, 1, 2, 4, 8, 8, 16, 32}
	var jobs []*Job
	for i := 0; i < n; i++ {
		m, _ := Profile(names[rng.IntN(len(names))])
		jobs = append(jobs, &Job{ID: fmt.Sprintf("%s%d", prefix, i), GPUs: sizes[rng.IntN(len(sizes))], Model: m, Iterations: 100 + rng.IntN(10000)})
	}
	return jobs
}

// TestPoliciesProduceValidPlacements runs every policy through rounds of arrivals and departures
// and checks each returned placement applies cleanly, and that st is not modified by Schedule.
func TestPoliciesProduceValidPlacements(t *testing.T) {
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			c := mustUniform(t, 4, 4, 4)
			pol, err := NewPolicy(name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := NewState(c)
			var waiting []*Job
			for round := 0; round < 15; round++ {
				waiting = append(waiting, randomJobs(rng, 6, fmt.Sprintf("r%d-", round))...)
				waiting = append(waiting, testJob(fmt.Sprintf("huge%d", round), c.TotalGPUs()+1, 1e6, 0.1))
				before := st.Clone()
				ps := pol.Schedule(st, waiting)
				if !reflect.DeepEqual(before.free, st.free) || len(before.Running) != len(st.Running) {
					t.Fatal("Schedule modified the state")
				}
				started := map[string]bool{}
				for _, p := range ps {
					if p.Job.GPUs > c.TotalGPUs() {
						t.Fatalf("impossible job %s placed", p.Job.ID)
					}
					if err := st.Add(p); err != nil {
						t.Fatalf("round %d: placement does not apply: %v", round, err)
					}
					started[p.Job.ID] = true
				}
				var still []*Job
				for _, j := range waiting {
					if !started[j.ID] {
						still = append(still, j)
					}
				}
				waiting = still
				if st.TotalFreeGPUs() > 0 && len(ps) == 0 {
					for _, j := range waiting {
						if j.GPUs <= st.TotalFreeGPUs() {
							t.Fatalf("round %d: job %s (%d GPUs) fits %d free GPUs but nothing started", round, j.ID, j.GPUs, st.TotalFreeGPUs())
						}
					}
				}
				for _, r := range st.Running {
					if rng.IntN(3) == 0 {
						st.Remove(r.Job.ID)
					}
				}
			}
		})
	}
}

func TestNetPackSingleMachineBestFit(t *testing.T) {
	c := mustUniform(t, 2, 2, 8)
	st := NewState(c)
	if err := st.Add(Placement{Job: testJob("x", 6, 1e6, 0.1), Workers: []Worker{{Machine: 1, GPUs: 6}}, PS: 1}); err != nil {
		t.Fatal(err)
	}
	pol, _ := NewPolicy("netpack", Options{})
	ps := pol.Schedule(st, []*Job{testJob("a", 2, 1e8, 0.1)})
	if len(ps) != 1 || len(ps[0].Workers) != 1 || ps[0].Workers[0].Machine != 1 || ps[0].PS != 1 {
		t.Fatalf("want the 2-GPU job on machine 1 with its PS there, got %+v", ps)
	}
}

// TestNetPackAvoidsHotspot: machine 2's NIC is saturated as the PS of a running job; a new job
// that needs two machines must not put a worker or its PS there (free machines: 2, 3 in r0, 4..7 in r1).
func TestNetPackAvoidsHotspot(t *testing.T) {
	c := mustUniform(t, 2, 4, 1)
	st := NewState(c)
	hog := oneGPUWorkers(testJob("hog", 0, 1e9, 1e-3), 2, false, 0, 1)
	if err := st.Add(hog); err != nil {
		t.Fatal(err)
	}
	pol, _ := NewPolicy("netpack", Options{})
	ps := pol.Schedule(st, []*Job{testJob("a", 2, 1e8, 0.01)})
	if len(ps) != 1 {
		t.Fatalf("got %d placements", len(ps))
	}
	for _, w := range ps[0].Workers {
		if w.Machine == 2 {
			t.Fatalf("worker on the hotspot: %+v", ps[0])
		}
	}
	if ps[0].PS == 2 {
		t.Fatalf("PS on the hotspot: %+v", ps[0])
	}
	// A GPU-balancing baseline does not see the hotspot: it is the contrast that makes this test meaningful.
	gb, _ := NewPolicy("flow-balance", Options{})
	if got := gb.Schedule(st, []*Job{testJob("a", 2, 1e8, 0.01)}); len(got) != 1 {
		t.Fatal("baseline did not place")
	}
}

// TestNetPackINAEnablement: ToR r0 has INA capacity 1e9 B/s, exactly the flow of job a (12 GPUs,
// fan-in 3, ranked first). Job b (3 GPUs, fan-in 3) runs at full speed without INA (its PS NIC
// carries 3 x 0.5e9 = 1.5e9 B/s), but with INA it would take half of a's share and push a to
// fallback on a's PS NIC (f = (1.5e9 + 2·0.5e9)/3): b must be left without INA.
func TestNetPackINAEnablement(t *testing.T) {
	c := &Cluster{Name: "t", CoreGbps: 1000}
	for r := 0; r < 2; r++ {
		c.Racks = append(c.Racks, Rack{Name: fmt.Sprint("r", r), First: MachineID(8 * r), Count: 8, UplinkGbps: 1000, INAMemoryBytes: 1e9 * 20e-6, RTTSec: 20e-6})
		for m := 0; m < 8; m++ {
			c.Machines = append(c.Machines, Machine{Rack: r, GPUs: 4, NICGbps: 12})
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	w := &npWork{c: c, est: NewEstimator(c, Joint)}
	ja := testJob("a", 12, 1e9, 1.0)
	a := Placement{Job: ja, Workers: []Worker{{0, 4}, {1, 4}, {2, 4}}, PS: 8, INA: true}
	b := oneGPUWorkers(testJob("b", 0, 1e9, 2.0), 9, true, 3, 4, 5)
	for _, p := range []Placement{a, b} {
		if err := w.est.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := w.est.Rate("a"); !near(r.FlowBps, 2.5e9/3) {
		t.Fatalf("with both aggregating a should fall back to %v, got %+v", 2.5e9/3, r)
	}
	placed := []Placement{b, a}
	w.enableINA(placed)
	if !placed[1].INA || placed[0].INA {
		t.Fatalf("want INA for a only, got a=%v b=%v", placed[1].INA, placed[0].INA)
	}
	ra, _ := w.est.Rate("a")
	rb, _ := w.est.Rate("b")
	if !near(ra.FlowBps, 1e9) || !near(rb.FlowBps, 0.5e9) || rb.INABps != 0 {
		t.Fatalf("after enablement: a %+v, b %+v", ra, rb)
	}
}

// TestIncrementalAndFullEstimationPlaceIdentically: NetPack with the incremental estimator and
// with full re-estimation make the same decisions on random workloads.
func TestIncrementalAndFullEstimationPlaceIdentically(t *testing.T) {
	for seed := uint64(0); seed < 24; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		c, err := Uniform(UniformSpec{Racks: 2 + rng.IntN(4), MachinesPerRack: 2 + rng.IntN(6), GPUsPerMachine: []int{1, 2, 4, 8}[rng.IntN(4)],
			Oversubscription: 1 + 3*rng.Float64(), INAMemoryBytes: []float64{0, 2e4, 2e5}[rng.IntN(3)]})
		if err != nil {
			t.Fatal(err)
		}
		inc, _ := NewPolicy("netpack", Options{})
		full, _ := NewPolicy("netpack", Options{FullEstimate: true})
		sa, sb := NewState(c), NewState(c)
		for round := 0; round < 12; round++ {
			jobs := randomJobs(rng, 5, fmt.Sprintf("s%d-r%d-", seed, round))
			pa, pb := inc.Schedule(sa, jobs), full.Schedule(sb, jobs)
			if !reflect.DeepEqual(pa, pb) {
				t.Fatalf("seed %d round %d: incremental %+v\nfull %+v", seed, round, pa, pb)
			}
			for _, p := range pa {
				if err := sa.Add(p); err != nil {
					t.Fatal(err)
				}
				if err := sb.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range sa.Running {
				if rng.IntN(3) == 0 {
					sa.Remove(r.Job.ID)
					sb.Remove(r.Job.ID)
				}
			}
		}
	}
}

func TestKnapsackAdmission(t *testing.T) {
	c := mustUniform(t, 1, 2, 4) // 8 GPUs
	st := NewState(c)
	jobs := []*Job{testJob("a", 5, 1e6, 1), testJob("b", 4, 1e6, 1), testJob("c", 4, 1e6, 1), testJob("z", 9, 1e6, 1)}
	got := solveKnapsack(jobs, eligible(st, jobs), st.TotalFreeGPUs(), func(i int) float64 { return float64(jobs[i].GPUs) })
	if !reflect.DeepEqual(got, []int{1, 2}) {
		t.Fatalf("want b and c (8 GPUs), got %v", got)
	}
}

func TestNewPolicyUnknown(t *testing.T) {
	if _, err := NewPolicy("nope", Options{}); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

// TestNetPackHistoryIndependent: a reused NetPack policy (estimator caught up through the journal,
// or by a full comparison for a cloned state, including placements the caller dropped) decides
// exactly as a fresh one.
func TestNetPackHistoryIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c, err := Uniform(UniformSpec{Racks: 3, MachinesPerRack: 4, GPUsPerMachine: 4, INAMemoryBytes: 2e4})
	if err != nil {
		t.Fatal(err)
	}
	reused, _ := NewPolicy("netpack", Options{})
	st := NewState(c)
	for round := 0; round < 20; round++ {
		jobs := randomJobs(rng, 4, fmt.Sprintf("h%d-", round))
		if round%5 == 4 {
			st = st.Clone()
		}
		fresh, _ := NewPolicy("netpack", Options{})
		want := fresh.Schedule(st, jobs)
		got := reused.Schedule(st, jobs)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: reused %+v\nfresh %+v", round, got, want)
		}
		for i, p := range got {
			if i%3 == 2 {
				continue // the caller may drop placements
			}
			if err := st.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range st.Running {
			if rng.IntN(3) == 0 {
				st.Remove(r.Job.ID)
			}
		}
	}
}

func TestAdmitGreedyByDensity(t *testing.T) {
	jobs := []*Job{testJob("a", 4, 1e6, 1), testJob("b", 2, 1e6, 1), testJob("c", 3, 1e6, 1)}
	vals := []float64{4, 6, 3} // densities 1, 3, 1
	got := admitGreedy(jobs, []int{0, 1, 2}, 6, func(i int) float64 { return vals[i] })
	if !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("want b then a (6 GPUs), got %v", got)
	}
}

func TestNetPackHugeJobSpreads(t *testing.T) {
	c := mustUniform(t, 2, 80, 8) // 1,280 GPUs
	pol, _ := NewPolicy("netpack", Options{})
	st := NewState(c)
	ps := pol.Schedule(st, []*Job{testJob("huge", maxDPGPUs+76, 1e8, 0.1)})
	if len(ps) != 1 {
		t.Fatalf("huge job not placed")
	}
	if err := st.Add(ps[0]); err != nil {
		t.Fatal(err)
	}
}

func TestPlaceOne(t *testing.T) {
	c := mustUniform(t, 2, 4, 4)
	for _, name := range PolicyNames() {
		pl, err := NewPlacer(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := NewState(c)
		p, ok := PlaceOne(pl, st, testJob("a", 12, 1e8, 0.2))
		if !ok || st.TotalFreeGPUs() != 32 {
			t.Fatalf("%s: PlaceOne ok=%v, free GPUs after %d (must not change)", name, ok, st.TotalFreeGPUs())
		}
		if err := st.Add(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, ok := PlaceOne(pl, st, testJob("b", 21, 1e8, 0.2)); ok {
			t.Fatalf("%s placed 21 GPUs on 20 free", name)
		}
		if _, ok := PlaceOne(pl, st, p.Job); ok {
			t.Fatalf("%s placed a running job again", name)
		}
	}
}

// fixedOrder admits waiting jobs last first, to check Compose follows the admission's order.
type fixedOrder struct{}

func (fixedOrder) Name() string { return "reverse" }
func (fixedOrder) Admit(_ *State, waiting []*Job) []int {
	var out []int
	for i := len(waiting) - 1; i >= 0; i-- {
		out = append(out, i)
	}
	return out
}

func TestComposeOrderAndName(t *testing.T) {
	c := mustUniform(t, 1, 2, 4)
	pl, _ := NewPlacer("gandiva", Options{})
	pol := Compose(fixedOrder{}, pl, PriorityNone)
	if pol.Name() != "gandiva+reverse+prio-none" {
		t.Fatalf("name %q", pol.Name())
	}
	ps := pol.Schedule(NewState(c), []*Job{testJob("a", 4, 1e8, 0.2), testJob("b", 6, 1e8, 0.2)})
	// b first takes 4+2 GPUs; a (4 GPUs) no longer fits the 2 left.
	if len(ps) != 1 || ps[0].Job.ID != "b" || ps[0].Priority != 0 {
		t.Fatalf("got %+v", ps)
	}
}

func TestModelPartialOverlap(t *testing.T) {
	m := Model{Name: "m", GradientBytes: 1e8, ComputeSec: 0.3, ForwardSec: 0.1}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !near(m.DemandBps(), 5e8) || !near(m.IterPerSec(5e8), 1/0.3) || !near(m.IterPerSec(2.5e8), 2) || !near(m.IterPerSec(1e9), 1/0.3) {
		t.Fatalf("demand %v, rates %v %v %v", m.DemandBps(), m.IterPerSec(5e8), m.IterPerSec(2.5e8), m.IterPerSec(1e9))
	}
	for _, f := range []float64{-0.1, 0.31} {
		if bad := (Model{Name: "m", GradientBytes: 1, ComputeSec: 0.3, ForwardSec: f}); bad.Validate() == nil {
			t.Errorf("forward_sec %v accepted", f)
		}
	}
}

// TestNoOverlapModel: ForwardSec = ComputeSec (compute, then all-reduce) has no compute-bound
// flow; the estimator gives it all the network it can and every policy still places it.
func TestNoOverlapModel(t *testing.T) {
	c := mustUniform(t, 1, 4, 2) // 100G NICs
	m := Model{Name: "seq", GradientBytes: 1e8, ComputeSec: 0.1, ForwardSec: 0.1}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	j := &Job{ID: "a", GPUs: 4, Model: m, Iterations: 10}
	// Two machines, PS on the first: one stream at the NIC's 12.5e9 B/s: iteration 0.1 + 0.008 s.
	r := Estimate(c, []Placement{{Job: j, Workers: []Worker{{0, 2}, {1, 2}}, PS: 0}}, Joint)[0]
	if !near(r.FlowBps, 12.5e9) || !near(r.IterPerSec, 1/0.108) || r.Bottleneck == "compute" {
		t.Fatalf("rate %+v", r)
	}
	j2 := &Job{ID: "b", GPUs: 2, Model: m, Iterations: 10}
	r2 := Estimate(c, []Placement{{Job: j2, Workers: []Worker{{0, 2}}, PS: 0}}, Joint)[0]
	if r2.FlowBps != 0 || !near(r2.IterPerSec, 10) || r2.Bottleneck != "local" {
		t.Fatalf("local rate %+v", r2)
	}
	for _, name := range PolicyNames() {
		pol, _ := NewPolicy(name, Options{Admission: AdmitKnapsack})
		if ps := pol.Schedule(NewState(c), []*Job{j, j2}); len(ps) != 2 {
			t.Errorf("%s placed %d of 2 no-overlap jobs", name, len(ps))
		}
	}
}
