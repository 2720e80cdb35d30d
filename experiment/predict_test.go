package experiment

import (
	"math"
	"testing"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
)

// Two 2-worker jobs without INA, the PS of both on machine 2, one rack of 10 Mbit/s NICs: the PS's
// NIC is shared by four streams, max-min, with one job capped by its window.
func TestFluidRunHandComputed(t *testing.T) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 5, GPUsPerMachine: 1, NICGbps: 0.01, INAMemoryBytes: 1, RTTSec: 1})
	if err != nil {
		t.Fatal(err)
	}
	const G = 125000.0 // 1 Mbit per iteration
	job := func(id string, iters int, m0, m1 netpack.MachineID, windowBps float64) netpack.Placement {
		md := windowed(netpack.Model{Name: "x", GradientBytes: G, ComputeSec: 0.5}, windowBps)
		return netpack.Placement{Job: &netpack.Job{ID: id, GPUs: 2, Model: md, Iterations: iters},
			Workers: []netpack.Worker{{Machine: m0, GPUs: 1}, {Machine: m1, GPUs: 1}}, PS: 2}
	}
	// Job a: a window cap of 1 Mbit/s (125 kB/s); job b: no real cap. The PS NIC (10 Mbit/s)
	// is shared max-min: a's two streams freeze at 1 each, b's two get (10 - 2)/2 = 4 each.
	out := fluidRun(c, []netpack.Placement{job("a", 10, 0, 1, 125000), job("b", 10, 3, 4, 1e12)}, netpack.FairShare)
	// b: iteration 0.5 s + 1 Mbit / 4 Mbit/s = 0.75 s, 10 of them: 7.5 s. a: 0.5 + 1 = 1.5 s each;
	// it stays capped by its window after b ends, so 15 s.
	if got := out["b"]; math.Abs(got.jct-7.5) > 1e-6 || math.Abs(got.mbps-4) > 1e-6 {
		t.Errorf("b: %+v, want JCT 7.5 s at 4 Mbit/s", got)
	}
	if got := out["a"]; math.Abs(got.jct-15) > 1e-6 || math.Abs(got.mbps-1) > 1e-6 {
		t.Errorf("a: %+v, want JCT 15 s at 1 Mbit/s", got)
	}
}

// The fitted switch cost is not clipped: BMv2 on a busy machine gave a lone wide job 0.386 Mbit/s,
// which needs more than 1 ms per packet in the simulator, and a fixed bracket of [0, 1 ms] returned
// its upper end (make validate SWITCH=bmv2 printed "switch 1000.0 µs/packet").
func TestFitSwitchPacketSecBeyondOneMillisecond(t *testing.T) {
	topo, err := topology.Load("../scheduler/examples/validate-topology.json")
	if err != nil {
		t.Fatal(err)
	}
	cal := calibration{RTTSec: 0.01775, Window: 8, WideMbps: 0.386, Wide: mixJob{Name: "wide",
		Workers: []string{"h1", "h2", "h3", "h4"}, PS: "h5", INA: true, Iterations: 38, Bytes: 65536, ComputeSec: 0.005}}
	phys, err := physicalCluster(topo, cal)
	if err != nil {
		t.Fatal(err)
	}
	nw := network(sim.DefaultSlotModel(), cal.Window, false)
	sec, err := fitSwitchPacketSec(phys, nw, cal)
	if err != nil {
		t.Fatal(err)
	}
	if sec <= 1e-3 {
		t.Errorf("fitted %.1f µs per packet; the simulator needs more than 1 ms to slow this job to %.3f Mbit/s", sec*1e6, cal.WideMbps)
	}
	nw.SwitchPacketSec = sec
	out, err := sim.Predict(phys.Model, []sim.MixJob{{Placement: placed(phys, cal.Wide), Window: float64(cal.Window)}}, nw)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].CommBps * 8 / 1e6; math.Abs(got-cal.WideMbps) > 0.01*cal.WideMbps {
		t.Errorf("at the fitted %.1f µs per packet the simulator gives %.3f Mbit/s, measured %.3f", sec*1e6, got, cal.WideMbps)
	}
}
