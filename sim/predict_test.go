package sim

import (
	"strings"
	"testing"

	"github.com/inapack/inapack/netpack"
)

// smallCluster is an emulated testbed: two racks of two 2-GPU hosts on 10 Mbit/s links (uplinks
// too), 1 ms RTT, 16 aggregator slots per ToR.
func smallCluster(t *testing.T) *netpack.Cluster {
	t.Helper()
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 2, MachinesPerRack: 2, GPUsPerMachine: 2, NICGbps: Mbps(10),
		Oversubscription: 2, INAMemoryBytes: 16 * 256, RTTSec: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A job computing then all-reducing (no overlap), its two workers in the PS's rack and its PS on
// a third host, without INA: both streams meet at the PS's 10 Mbit/s NIC, so each moves
// 5 Mbit/s of packets, 256/314 of it gradient. An iteration is compute + G / rate.
func TestPredictNoOverlapByHand(t *testing.T) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 3, GPUsPerMachine: 2, NICGbps: Mbps(10), RTTSec: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	m := netpack.Model{Name: "seq", GradientBytes: 256e3, ComputeSec: 0.1, ForwardSec: 0.1}
	j := &netpack.Job{ID: "a", GPUs: 4, Model: m, Iterations: 50}
	p := netpack.Placement{Job: j, Workers: []netpack.Worker{{Machine: 1, GPUs: 2}, {Machine: 2, GPUs: 2}}, PS: 0}
	out, err := Predict(c, []MixJob{{Placement: p, Start: 5}}, Network{})
	if err != nil {
		t.Fatal(err)
	}
	goodput := 10e6 / 8 / 2 * 256 / 314
	iter := 0.1 + 256e3/goodput
	o := out[0]
	if !near(o.CommBps, goodput) || !near(o.JCT, 50*iter) || o.Start != 5 || !near(o.End, 5+50*iter) || o.Bottleneck != "nic-rx:0" {
		t.Fatalf("%+v, want comm %v B/s, JCT %v s, bottleneck nic-rx:0", o, goodput, 50*iter)
	}
	// With INA the ToR merges the two streams: one per chunk reaches the PS.
	p.INA = true
	out, _ = Predict(c, []MixJob{{Placement: p}}, Network{})
	if !near(out[0].CommBps, 2*goodput) || !near(out[0].INAFrac, 1) {
		t.Fatalf("with INA %+v, want twice the goodput, all aggregated", out[0])
	}
}

// Two jobs on the two-rack testbed, the second starting later and sharing the first one's PS
// host and rack uplink: the first slows down while both run, and the outcomes account for it.
func TestPredictMix(t *testing.T) {
	c := smallCluster(t)
	m := netpack.Model{Name: "seq", GradientBytes: 64e3, ComputeSec: 0.05, ForwardSec: 0.05}
	a := netpack.Placement{Job: &netpack.Job{ID: "a", GPUs: 4, Model: m, Iterations: 200},
		Workers: []netpack.Worker{{Machine: 0, GPUs: 2}, {Machine: 2, GPUs: 2}}, PS: 0, INA: true, Priority: 5}
	b := netpack.Placement{Job: &netpack.Job{ID: "b", GPUs: 4, Model: m, Iterations: 100},
		Workers: []netpack.Worker{{Machine: 1, GPUs: 2}, {Machine: 3, GPUs: 2}}, PS: 1, INA: true, Priority: 1}
	alone, err := Predict(c, []MixJob{{Placement: a}}, Network{})
	if err != nil {
		t.Fatal(err)
	}
	both, err := Predict(c, []MixJob{{Placement: a}, {Placement: b, Start: 10, Window: 8}}, Network{})
	if err != nil {
		t.Fatal(err)
	}
	if !(both[0].JCT > alone[0].JCT) || both[1].Start != 10 || !(both[1].End > 10) || both[0].Bottleneck == "" {
		t.Fatalf("alone %+v; with b %+v", alone[0], both)
	}
	for _, bad := range []struct {
		mix  []MixJob
		want string
	}{
		{[]MixJob{{Placement: a}, {Placement: a, Start: 1}}, "twice"},
		{[]MixJob{{Placement: a, Start: -1}}, "start"},
		{[]MixJob{{Placement: a}, {Placement: netpack.Placement{Job: &netpack.Job{ID: "c", GPUs: 2, Model: m, Iterations: 1},
			Workers: []netpack.Worker{{Machine: 0, GPUs: 2}}, PS: 0}}}, "free GPUs"},
	} {
		if _, err := Predict(c, bad.mix, Network{}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("got %v, want an error mentioning %q", err, bad.want)
		}
	}
	if _, err := Predict(c, []MixJob{{Placement: a}}, Network{PacketBytes: 100}); err == nil {
		t.Error("packets smaller than chunks accepted")
	}
}
