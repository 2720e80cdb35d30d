package netpack

import (
	"math"
	"math/rand/v2"
	"testing"
)

// oneRack is six 100G machines under one ToR whose INA peak is 5e9 B/s.
func oneRack(t *testing.T) *Cluster {
	t.Helper()
	c := &Cluster{Name: "t", CoreGbps: 200, Racks: []Rack{{Name: "r0", First: 0, Count: 6, UplinkGbps: 100,
		INAMemoryBytes: 5e9 * 20e-6, RTTSec: 20e-6}}}
	for m := 0; m < 6; m++ {
		c.Machines = append(c.Machines, Machine{Rack: 0, GPUs: 4, NICGbps: 100})
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPriorityShareHandComputed(t *testing.T) {
	// a: workers 0,1, PS 2; b: workers 3,4, PS 5. Each PS NIC carries x + 2(f-x) = 12.5e9 B/s.
	// Fair: INA saturates at 2.5e9 each, so 2.5e9 + 2(f-2.5e9) = 12.5e9, f = 7.5e9 for both.
	// Priority a > b: a aggregates all it can (5e9): f_a = 5e9 + 7.5e9/2 = 8.75e9; b is
	// preempted, all its traffic falls back: 2f_b = 12.5e9, f_b = 6.25e9.
	big := 1e9
	mk := func(pa, pb uint8) []Placement {
		a := oneGPUWorkers(testJob("a", 0, big, 1e-3), 2, true, 0, 1)
		b := oneGPUWorkers(testJob("b", 0, big, 1e-3), 5, true, 3, 4)
		a.Priority, b.Priority = pa, pb
		return []Placement{a, b}
	}
	cases := []struct {
		name       string
		sharing    Sharing
		pa, pb     uint8
		fa, fb     float64
		inaA, inaB float64
	}{
		{"fair", FairShare, 9, 1, 7.5e9, 7.5e9, 2.5e9, 2.5e9},
		{"priority, a first", PriorityShare, 9, 1, 8.75e9, 6.25e9, 5e9, 0},
		{"priority, b first", PriorityShare, 1, 9, 6.25e9, 8.75e9, 0, 5e9},
		{"priority, equal: fair", PriorityShare, 4, 4, 7.5e9, 7.5e9, 2.5e9, 2.5e9},
	}
	for _, tc := range cases {
		rs := EstimateSharing(oneRack(t), mk(tc.pa, tc.pb), Joint, tc.sharing)
		if !near(rs[0].FlowBps, tc.fa) || !near(rs[1].FlowBps, tc.fb) {
			t.Errorf("%s: flows %v, %v; want %v, %v", tc.name, rs[0].FlowBps, rs[1].FlowBps, tc.fa, tc.fb)
		}
		if math.Abs(rs[0].INABps-tc.inaA) > 1 || math.Abs(rs[1].INABps-tc.inaB) > 1 {
			t.Errorf("%s: INA %v, %v; want %v, %v", tc.name, rs[0].INABps, rs[1].INABps, tc.inaA, tc.inaB)
		}
	}
}

// checkCapacities verifies no resource carries more than its capacity and tracked loads are right;
// it returns the load recomputed from the jobs.
func checkCapacities(t *testing.T, e *Estimator) []float64 {
	t.Helper()
	load := make([]float64, len(e.cap))
	for _, j := range e.jobs {
		for _, u := range j.uses {
			load[u.res] += u.load(j.f, j.shares)
		}
	}
	for r := range load {
		if load[r] > e.cap[r]*(1+1e-9)+1e-6 {
			t.Fatalf("%s overloaded: %v > %v", e.resName(int32(r)), load[r], e.cap[r])
		}
		if math.Abs(load[r]-e.load[r]) > 1e-6*math.Max(1, e.cap[r]) {
			t.Fatalf("%s: tracked load %v, actual %v", e.resName(int32(r)), e.load[r], load[r])
		}
	}
	return load
}

// With strict priority, adding a job never lowers the INA rate of a job of higher priority.
// Links are made ample (every job runs at its compute bound) so that INA is the only shared
// resource: with binding links a new job can slow anyone through congestion control, and a
// slower job uses less INA whatever its priority.
func TestPriorityShareHigherNeverLoses(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	for trial := 0; trial < 40; trial++ {
		c, err := Uniform(UniformSpec{Racks: 1 + rng.IntN(3), MachinesPerRack: 3 + rng.IntN(5), GPUsPerMachine: 2,
			NICGbps: 1e5, INAMemoryBytes: float64(1+rng.IntN(4)) * 2e4})
		if err != nil {
			t.Fatal(err)
		}
		ps := randomPlacements(rng, c, 4+rng.IntN(10))
		e := NewEstimatorSharing(c, Joint, PriorityShare)
		for i := range ps {
			ps[i].Priority = uint8(rng.IntN(4))
			before := map[string]float64{}
			for id := range e.jobs {
				r, _ := e.Rate(id)
				before[id] = r.INABps
			}
			if err := e.Add(ps[i]); err != nil {
				t.Fatal(err)
			}
			checkCapacities(t, e)
			for id, was := range before {
				j := e.jobs[id]
				r, _ := e.Rate(id)
				if j.p.Priority > ps[i].Priority && r.INABps < was*(1-1e-9)-1e-3 {
					t.Fatalf("trial %d: adding %s (priority %d) cut %s (priority %d) from %v to %v B/s of INA",
						trial, ps[i].Job.ID, ps[i].Priority, id, j.p.Priority, was, r.INABps)
				}
			}
		}
	}
}

func TestPriorityShareEqualPrioritiesIsFair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 30; trial++ {
		c, err := Uniform(UniformSpec{Racks: 1 + rng.IntN(3), MachinesPerRack: 2 + rng.IntN(5), GPUsPerMachine: 2,
			INAMemoryBytes: float64(rng.IntN(3)) * 1e5, Oversubscription: 1 + 3*rng.Float64()})
		if err != nil {
			t.Fatal(err)
		}
		ps := randomPlacements(rng, c, 3+rng.IntN(10))
		for i := range ps {
			ps[i].Priority = 7
		}
		a, b := Estimate(c, ps, Joint), EstimateSharing(c, ps, Joint, PriorityShare)
		for i := range a {
			if !near(a[i].FlowBps, b[i].FlowBps) {
				t.Fatalf("trial %d job %d: fair %v, priority with equal priorities %v", trial, i, a[i].FlowBps, b[i].FlowBps)
			}
		}
	}
}
