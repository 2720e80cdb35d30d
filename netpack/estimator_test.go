package netpack

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }

// twoRacks: rack r0 has machines 0..3, r1 has 4..7; 100G NICs, 100G uplinks, 200G core.
func twoRacks(t *testing.T, inaBytes, rtt float64) *Cluster {
	t.Helper()
	c := &Cluster{Name: "t", CoreGbps: 200}
	for r := 0; r < 2; r++ {
		c.Racks = append(c.Racks, Rack{Name: []string{"r0", "r1"}[r], First: MachineID(4 * r), Count: 4, UplinkGbps: 100,
			INAMemoryBytes: inaBytes, RTTSec: rtt})
		for m := 0; m < 4; m++ {
			c.Machines = append(c.Machines, Machine{Rack: r, GPUs: 4, NICGbps: 100})
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEstimateHandComputed(t *testing.T) {
	big := 1e9 // gradient bytes; compute 1 ms: compute-bound flow 1e12 B/s, never the limit here
	cases := []struct {
		name     string
		inaBytes float64
		mode     Mode
		place    func() []Placement
		want     []float64 // flow, bytes/s
		bn       []string
	}{
		{"one stream limited by NIC", 0, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 0, false, 0, 1)}
		}, []float64{100 * gbps}, []string{"nic:1"}},
		{"two jobs share the PS NIC", 0, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 0, false, 1),
				oneGPUWorkers(testJob("b", 0, big, 1e-3), 0, false, 2)}
		}, []float64{50 * gbps, 50 * gbps}, []string{"nic:0", "nic:0"}},
		{"compute bound", 0, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, 1e6, 1e-3), 0, false, 1)}
		}, []float64{1e9}, []string{"compute"}},
		{"colocated single worker is local", 0, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 3, false, 3)}
		}, []float64{1e12}, []string{"local"}},
		{"no INA: four streams cross the uplink", 0, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 4, true, 0, 1, 2, 3)}
		}, []float64{25 * gbps}, []string{"uplink:r0"}},
		{"ample INA: one aggregated stream crosses the uplink", 1e9, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 4, true, 0, 1, 2, 3)}
		}, []float64{100 * gbps}, []string{"nic:0"}},
		// INA peak 5e9 B/s: uplink load x + 4(f-x) = 12.5e9 with x = 5e9 gives f = 6.875e9.
		{"INA saturates, rest falls back", 5e9 * 20e-6, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 4, true, 0, 1, 2, 3)}
		}, []float64{6.875e9}, []string{"uplink:r0"}},
		{"separate: INA bound taken as the limit", 5e9 * 20e-6, Separate, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 4, true, 0, 1, 2, 3)}
		}, []float64{5e9}, []string{"ina:r0"}},
		// Uplink r0: a aggregated (1 stream) + b unaggregated (2 streams): f_a + 2 f_b = 12.5e9, equal
		// rates give 12.5e9/3 each.
		{"INA and plain job share an uplink", 1e9, Joint, func() []Placement {
			return []Placement{oneGPUWorkers(testJob("a", 0, big, 1e-3), 4, true, 0, 1),
				oneGPUWorkers(testJob("b", 0, big, 1e-3), 5, false, 2, 3)}
		}, []float64{12.5e9 / 3, 12.5e9 / 3}, []string{"uplink:r0", "uplink:r0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := twoRacks(t, tc.inaBytes, 20e-6)
			ps := tc.place()
			got := Estimate(c, ps, tc.mode)
			for i := range ps {
				if !near(got[i].FlowBps, tc.want[i]) || got[i].Bottleneck != tc.bn[i] {
					t.Errorf("job %s: flow %.4g (%s), want %.4g (%s)", ps[i].Job.ID, got[i].FlowBps, got[i].Bottleneck, tc.want[i], tc.bn[i])
				}
				if want := got[i].FlowBps / ps[i].Job.Model.GradientBytes; !near(got[i].IterPerSec, want) {
					t.Errorf("iter/s %v, want %v", got[i].IterPerSec, want)
				}
			}
		})
	}
}

func TestEstimateINAHelps(t *testing.T) {
	on := twoRacks(t, 1e9, 20e-6)
	off := twoRacks(t, 0, 20e-6)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 30; trial++ {
		ps := randomPlacements(rng, on, 6)
		a, b := Estimate(on, ps, Joint), Estimate(off, ps, Joint)
		var sa, sb float64
		for i := range ps {
			sa += a[i].FlowBps
			sb += b[i].FlowBps
		}
		// Max-min allocations are not monotone per job, but the smallest rate cannot fall when INA
		// only removes load.
		if minFlow(a) < minFlow(b)*(1-1e-9) {
			t.Fatalf("trial %d: INA lowered the minimum flow: %v < %v", trial, minFlow(a), minFlow(b))
		}
	}
}

func minFlow(rs []JobRate) float64 {
	m := math.Inf(1)
	for _, r := range rs {
		m = math.Min(m, r.FlowBps)
	}
	return m
}

// checkMaxMin verifies capacities are respected and every job is frozen by compute, by being
// local, or by a saturated link on which no job has a higher flow.
func checkMaxMin(t *testing.T, e *Estimator) {
	t.Helper()
	load := checkCapacities(t, e)
	for id, j := range e.jobs {
		if j.f > j.demand*(1+1e-9) {
			t.Fatalf("job %s above its compute bound", id)
		}
		if j.f >= j.demand*(1-1e-9) || len(j.uses) == 0 {
			continue
		}
		ok := false
		for _, u := range j.uses {
			r := u.res
			if e.x.isINA(r) || u.slope(j.f, j.shares) == 0 || load[r] < e.cap[r]*(1-1e-7) {
				continue
			}
			top := true
			for _, k := range e.users[r] {
				if k.f > j.f*(1+1e-7) && e.slopeOn(k, r, k.f, nil) > 0 {
					top = false
				}
			}
			if top {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("job %s (flow %v) has no bottleneck: it could gain without hurting a slower job", id, j.f)
		}
	}
}

func TestEstimatorMaxMinRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	bound := 0 // changes after which a priority allotment was in force
	defer func() {
		if bound == 0 {
			t.Error("no trial exercised priority sharing")
		}
	}()
	for trial := 0; trial < 60; trial++ {
		c, err := Uniform(UniformSpec{Racks: 1 + rng.IntN(4), MachinesPerRack: 2 + rng.IntN(5), GPUsPerMachine: 1 + rng.IntN(4),
			INAMemoryBytes: float64(rng.IntN(3)) * 1e5, Oversubscription: 1 + 3*rng.Float64(), CoreOversubscription: 1 + 2*rng.Float64()})
		if err != nil {
			t.Fatal(err)
		}
		ps := randomPlacements(rng, c, 3+rng.IntN(12))
		sharing := Sharing(trial % 2)
		if sharing == PriorityShare {
			for i := range ps {
				ps[i].Priority = uint8(rng.IntN(3))
			}
		}
		full := NewEstimatorSharing(c, Joint, sharing)
		full.full = true
		inc := NewEstimatorSharing(c, Joint, sharing)
		for _, p := range ps {
			if err := full.Add(p); err != nil {
				t.Fatal(err)
			}
			if err := inc.Add(p); err != nil {
				t.Fatal(err)
			}
			checkMaxMin(t, inc)
			sameRates(t, full, inc)
			if inc.prioritised {
				bound++
			}
		}
		for _, i := range rng.Perm(len(ps)) {
			full.Remove(ps[i].Job.ID)
			inc.Remove(ps[i].Job.ID)
			checkMaxMin(t, inc)
			sameRates(t, full, inc)
		}
	}
}

func sameRates(t *testing.T, a, b *Estimator) {
	t.Helper()
	for id := range a.jobs {
		ra, _ := a.Rate(id)
		rb, ok := b.Rate(id)
		if !ok || !near(ra.FlowBps, rb.FlowBps) {
			t.Fatalf("job %s: full %v (%s), incremental %v (%s)", id, ra.FlowBps, ra.Bottleneck, rb.FlowBps, rb.Bottleneck)
		}
	}
}

func TestEstimatorSeparateNeverAboveJointForINAJobs(t *testing.T) {
	// Separate caps an INA job at its INA share; Joint lets the excess fall back to links, so for a
	// single job Joint is at least Separate.
	c := twoRacks(t, 1e5, 20e-6)
	p := oneGPUWorkers(testJob("a", 0, 1e8, 1e-3), 4, true, 0, 1, 2, 3)
	j, s := Estimate(c, []Placement{p}, Joint), Estimate(c, []Placement{p}, Separate)
	if s[0].FlowBps > j[0].FlowBps*(1+1e-9) {
		t.Fatalf("separate %v above joint %v", s[0].FlowBps, j[0].FlowBps)
	}
}

func TestEstimatorRejects(t *testing.T) {
	c := twoRacks(t, 0, 20e-6)
	e := NewEstimator(c, Joint)
	p := oneGPUWorkers(testJob("a", 0, 1e6, 1e-3), 0, false, 1)
	if err := e.Add(p); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(p); err == nil {
		t.Fatal("duplicate job accepted")
	}
	bad := oneGPUWorkers(testJob("b", 0, 1e6, 1e-3), 99, false, 1)
	if err := e.Add(bad); err == nil {
		t.Fatal("PS on a machine that does not exist accepted")
	}
	if e.Remove("nope") {
		t.Fatal("removed an unknown job")
	}
	r := Estimate(c, []Placement{bad}, Joint)
	if r[0].FlowBps != 0 || r[0].Bottleneck == "" {
		t.Fatalf("invalid placement got %+v", r[0])
	}
}
