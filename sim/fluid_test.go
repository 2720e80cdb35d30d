package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inapack/inapack/netpack"
)

// place builds a placement of one GPU per listed machine (PS first).
func place(id string, m netpack.Model, ps netpack.MachineID, ina bool, prio uint8, ms ...netpack.MachineID) netpack.Placement {
	p := netpack.Placement{Job: &netpack.Job{ID: id, GPUs: len(ms), Model: m, Iterations: 100}, PS: ps, INA: ina, Priority: prio}
	for _, w := range ms {
		p.Workers = append(p.Workers, netpack.Worker{Machine: w, GPUs: 1})
	}
	return p
}

func settled(t *testing.T, f *fluid, ids ...string) []fluidRate {
	t.Helper()
	f.settle()
	var out []fluidRate
	for _, id := range ids {
		r, ok := f.rateOf(id)
		if !ok {
			t.Fatalf("no rate for %s", id)
		}
		out = append(out, r)
	}
	return out
}

// Slot sharing. Two jobs aggregate 4 streams each at one ToR whose slots they overflow. With
// equal priorities (no preemption) ATP's longer hold makes both collide more than with ESA.
// With ESA and different priorities, the higher one never collides and the lower one is evicted.
func TestFluidSlotCollisions(t *testing.T) {
	vgg, _ := netpack.Profile("vgg16")
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 10, GPUsPerMachine: 1, NICGbps: 25, INAMemoryBytes: 128 * 256})
	if err != nil {
		t.Fatal(err)
	}
	agg := func(slots SlotPolicy, pa, pb uint8) (float64, float64, float64) {
		f := newFluid(c, Network{Slots: SlotModel{Policy: slots, SkewFrac: 0.5, PSSec: 5e-6}})
		for _, p := range []netpack.Placement{place("a", vgg, 0, true, pa, 0, 1, 2, 3, 4), place("b", vgg, 5, true, pb, 5, 6, 7, 8, 9)} {
			if err := f.add(p, 0, -1); err != nil {
				t.Fatal(err)
			}
		}
		r := settled(t, f, "a", "b")
		return r[0].INAFrac, r[1].INAFrac, f.jobs["a"].groups[0].hold
	}
	ea, eb, eh := agg(ESA, 0, 0)
	aa, ab, ah := agg(ATP, 0, 0)
	if !(ah > 2*eh) || !(aa < ea && ab < eb) || !(ea > 0 && ea < 1 && near(ea, eb)) {
		t.Fatalf("ESA aggregated %.3f/%.3f (hold %.1f µs), ATP %.3f/%.3f (hold %.1f µs)", ea, eb, eh*1e6, aa, ab, ah*1e6)
	}
	hi, lo, _ := agg(ESA, 9, 1)
	if !near(hi, 1) || !(lo < eb) {
		t.Fatalf("ESA priorities: high aggregated %.3f (want 1), low %.3f (want below %.3f)", hi, lo, eb)
	}
	// Without preemption priorities do not matter.
	f := func() float64 {
		ff := newFluid(c, Network{Slots: SlotModel{Policy: ESA, SkewFrac: 0.5, NoPreempt: true}})
		_ = ff.add(place("a", vgg, 0, true, 9, 0, 1, 2, 3, 4), 0, -1)
		_ = ff.add(place("b", vgg, 5, true, 1, 5, 6, 7, 8, 9), 0, -1)
		return settled(t, ff, "a")[0].INAFrac
	}()
	if !near(f, ea) {
		t.Fatalf("no preemption: %.4f aggregated, want the equal-priority %.4f", f, ea)
	}
}

// Disjoint slot ranges never collide; identical ranges collide as a shared pool would.
func TestFluidSlotRanges(t *testing.T) {
	vgg, _ := netpack.Profile("vgg16")
	c, _ := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 10, GPUsPerMachine: 1, NICGbps: 25, INAMemoryBytes: 128 * 256})
	frac := func(loA, loB float64) float64 {
		f := newFluid(c, DefaultNetwork())
		_ = f.add(place("a", vgg, 0, true, 0, 0, 1, 2, 3, 4), 64, loA)
		_ = f.add(place("b", vgg, 5, true, 0, 5, 6, 7, 8, 9), 64, loB)
		return settled(t, f, "a")[0].INAFrac
	}
	if d, s := frac(0, 64), frac(0, 0); !near(d, 1) || !(s < 0.99) {
		t.Fatalf("disjoint ranges aggregated %.4f (want 1), identical %.4f (want collisions)", d, s)
	}
}

// A small window limits a job to window/RTT; per-packet costs cap a switch's and a PS's rate.
func TestFluidWindowAndPacketCosts(t *testing.T) {
	c := testCluster(t, 1, 3, 1, 0)
	one := place("a", testModel, 0, false, 0, 0, 1)
	f := newFluid(c, exact)
	_ = f.add(one, 4, -1)
	r := settled(t, f, "a")[0]
	// 4 chunks per 20 µs RTT, far below the 1 GB/s NIC: no queue anywhere.
	if !near(r.CommBps, 4*256/20e-6) || r.Bottleneck != "window" {
		t.Fatalf("window-limited rate %+v, want %v B/s", r, 4*256/20e-6)
	}
	for _, tc := range []struct {
		n    Network
		want string
		pps  float64 // packets the resource handles per chunk of the job
	}{
		{Network{ChunkBytes: 256, PacketBytes: 256, SwitchPacketSec: 1e-6}, "switch:0", 2}, // the push and the result enter the ToR
		{Network{ChunkBytes: 256, PacketBytes: 256, PSPacketSec: 1e-6}, "ps-cpu:0", 2},     // push received, result sent
	} {
		f := newFluid(c, tc.n)
		_ = f.add(one, 0, -1)
		r := settled(t, f, "a")[0]
		if want := 1e6 / tc.pps * 256; !near(r.CommBps, want) || r.Bottleneck != tc.want {
			t.Errorf("%+v: %+v, want %v B/s limited by %s", tc.n, r, want, tc.want)
		}
	}
}

// Partial overlap: a compute-bound job sends only while its backward pass runs, so it loads the
// network with GradientBytes per iteration, not continuously.
func TestFluidPartialOverlap(t *testing.T) {
	c := testCluster(t, 1, 2, 1, 0)
	m := netpack.Model{Name: "p", GradientBytes: 1e8, ComputeSec: 0.3, ForwardSec: 0.1} // demand 0.5 GB/s
	f := newFluid(c, exact)
	_ = f.add(place("a", m, 0, false, 0, 0, 1), 0, -1)
	r := settled(t, f, "a")[0]
	if !near(r.IterPerSec, 1/0.3) || r.Bottleneck != "compute" || !near(r.CommBps, 5e8) {
		t.Fatalf("%+v: want compute-bound at 1/0.3 it/s sending 0.5 GB/s while communicating", r)
	}
	if load := f.res[f.rx(0)].load * 256; !near(load, 1e8/0.3) {
		t.Fatalf("PS NIC load %v B/s, want one gradient per iteration %v", load, 1e8/0.3)
	}
}

// Settling only the component a change affects gives what settling every job from scratch gives
// (to 1%), on random sequences of starts and ends (random placements, models, INA, priorities, windows).
func TestFluidIncrementalEqualsFull(t *testing.T) {
	names := []string{"vgg16", "resnet50", "alexnet", "inception3"}
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c, err := netpack.Uniform(netpack.UniformSpec{Racks: 3, MachinesPerRack: 6, GPUsPerMachine: 2, NICGbps: 25,
			Oversubscription: 2 + rng.Float64()*4, INAMemoryBytes: []float64{8192, 32768, 262144}[rng.IntN(3)]})
		if err != nil {
			t.Fatal(err)
		}
		n := Network{Slots: SlotModel{Policy: []SlotPolicy{ESA, ATP}[rng.IntN(2)], SkewFrac: 0.5, PSSec: 5e-6}}
		f := newFluid(c, n)
		var live []netpack.Placement
		for step := 0; step < 30; step++ {
			if len(live) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(live))
				f.remove(live[k].Job.ID)
				live = append(live[:k], live[k+1:]...)
			} else {
				m, _ := netpack.Profile(names[rng.IntN(len(names))])
				k := 2 + rng.IntN(5)
				ms := rng.Perm(len(c.Machines))[:k]
				var ws []netpack.MachineID
				for _, x := range ms {
					ws = append(ws, netpack.MachineID(x))
				}
				p := place(fmt.Sprintf("s%d-%d", seed, step), m, ws[0], rng.IntN(4) > 0, uint8(rng.IntN(3)), ws...)
				netpackSort(p.Workers)
				if err := f.add(p, 0, -1); err != nil {
					t.Fatal(err)
				}
				live = append(live, p)
			}
			f.settle()
			full := newFluid(c, n)
			for _, p := range live {
				_ = full.add(p, 0, -1)
			}
			full.settle()
			for _, p := range live {
				a, _ := f.rateOf(p.Job.ID)
				b, _ := full.rateOf(p.Job.ID)
				// Within 1%: where two saturated resources carry nearly the same flows (pushes one
				// way, results the other) the split of their prices is nearly free, and the solver
				// stops at a slightly different point from a different start.
				if math.Abs(a.IterPerSec-b.IterPerSec) > 1e-2*b.IterPerSec || math.Abs(a.INAFrac-b.INAFrac) > 1e-2 {
					for _, q := range live {
						a, _ := f.rateOf(q.Job.ID)
						b, _ := full.rateOf(q.Job.ID)
						j := f.jobs[q.Job.ID]
						var racks []int
						for _, gi := range j.inaAt {
							racks = append(racks, j.groups[gi].rack)
						}
						t.Logf("job %s seen %v inaRacks %v prio %d: %.6f / %.6f agg %.4f / %.4f bn %s / %s", q.Job.ID, j.seen == f.epoch, racks, q.Priority, a.IterPerSec, b.IterPerSec, a.INAFrac, b.INAFrac, a.Bottleneck, b.Bottleneck)
					}
					t.Fatalf("seed %d step %d job %s: incremental %+v, full %+v", seed, step, p.Job.ID, a, b)
				}
			}
		}
	}
}

func netpackSort(ws []netpack.Worker) {
	for i := 1; i < len(ws); i++ {
		for k := i; k > 0 && ws[k].Machine < ws[k-1].Machine; k-- {
			ws[k], ws[k-1] = ws[k-1], ws[k]
		}
	}
}
