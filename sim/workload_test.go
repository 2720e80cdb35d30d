package sim

import (
	"reflect"
	"testing"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim/trace"
)

// Every registered policy runs a small synthetic trace to completion, and running all of them in
// parallel gives exactly what running each alone gives (no shared state, no randomness).
func TestAllPoliciesDeterministic(t *testing.T) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 2, MachinesPerRack: 4, GPUsPerMachine: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLinks(c, 25, 4); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Synthetic(trace.SynthConfig{Jobs: 80, TotalGPUs: 64, Load: 1.2, MaxGPUs: 32, DurationScale: 0.02}, 5)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Prepare(Setup{Cluster: c, Network: DefaultNetwork(), INA: true, Interval: 30}, tr)
	if err != nil {
		t.Fatal(err)
	}
	names := netpack.PolicyNames()
	all, err := w.RunAll(names, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		alone, err := w.Run(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(alone.Jobs, all[i].Jobs) || alone.Policy != n {
			t.Errorf("%s: parallel and single runs differ", n)
		}
		for _, j := range alone.Jobs {
			if !(j.End >= j.Start && j.Start >= j.Submit) {
				t.Fatalf("%s: job %s has submit %v start %v end %v", n, j.ID, j.Submit, j.Start, j.End)
			}
		}
	}
}

func TestPrepareRejectsBadSetup(t *testing.T) {
	c, _ := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 1, GPUsPerMachine: 1})
	tr := &trace.Trace{Jobs: []trace.Job{{ID: "a", GPUs: 1, Duration: 1}}}
	if _, err := Prepare(Setup{Cluster: c, Network: Network{Slots: SlotModel{Policy: "x"}}, Interval: 1}, tr); err == nil {
		t.Error("unknown slot policy accepted")
	}
	if err := SetLinks(c, -1, 0); err == nil {
		t.Error("negative NIC speed accepted")
	}
}
