package netpack

import "testing"

// queueScene is 2 racks x 4 machines x 2 GPUs, idle network; rack 1 runs a 2-GPU job, so rack 0
// has 8 free GPUs and rack 1 has 6. Nothing of 4 or 8 GPUs runs.
func queueScene(t *testing.T) *State {
	t.Helper()
	c, err := Uniform(UniformSpec{Racks: 2, MachinesPerRack: 4, GPUsPerMachine: 2, NICGbps: 25, Oversubscription: 4, INAMemoryBytes: 64 << 10, RTTSec: 20e-6})
	if err != nil {
		t.Fatal(err)
	}
	st := NewState(c)
	if err := st.Add(Placement{Job: testJob("small", 2, 1e6, 1), Workers: []Worker{{Machine: 4, GPUs: 2}}, PS: 4}); err != nil {
		t.Fatal(err)
	}
	return st
}

// The fragmentation price counts the jobs waiting in the round's queue: with an 8-GPU job queued
// behind a 4-GPU one, NetPack puts the 4 GPUs in rack 1 and keeps rack 0's 8 free GPUs whole for
// the 8-GPU job, which then fits one rack. Without the queue in demand (a round of the 4-GPU job
// alone) nothing of 8 GPUs is in demand and either rack will do.
func TestFragmentationPricesTheQueue(t *testing.T) {
	st := queueScene(t)
	pol, err := NewPolicy("netpack", Options{})
	if err != nil {
		t.Fatal(err)
	}
	four, eight := testJob("four", 4, 100e6, 0.1), testJob("eight", 8, 100e6, 0.1)
	placed := map[string]map[int]int{}
	for _, p := range pol.Schedule(st, []*Job{four, eight}) {
		placed[p.Job.ID] = racksOf(st.Cluster, p)
	}
	if rs := placed["four"]; len(rs) != 1 || rs[1] != 4 {
		t.Errorf("the 4-GPU job went to racks %v, want all 4 GPUs in rack 1", rs)
	}
	if rs := placed["eight"]; len(rs) != 1 || rs[0] != 8 {
		t.Errorf("the queued 8-GPU job went to racks %v, want all 8 GPUs in rack 0", rs)
	}
}
