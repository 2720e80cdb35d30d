package netpack

import "testing"

// fragScene is 4 racks x 8 machines x 2 GPUs with 16 KiB of INA memory per ToR: rack 0 runs a
// 16-GPU job, rack 1 an 8-GPU job aggregating in its ToR (8 GPUs left free), racks 2 and 3 are
// empty. The next 8-GPU job fits rack 1 (filling it) or an empty rack (sharing no ToR).
func fragScene(t *testing.T) (*State, *Job) {
	t.Helper()
	c, err := Uniform(UniformSpec{Racks: 4, MachinesPerRack: 8, GPUsPerMachine: 2, NICGbps: 25, Oversubscription: 4, INAMemoryBytes: 16 << 10, RTTSec: 20e-6})
	if err != nil {
		t.Fatal(err)
	}
	st := NewState(c)
	big := testJob("big", 16, 100e6, 0.1)
	p := Placement{Job: big, PS: 0, INA: true}
	for m := MachineID(0); m < 8; m++ {
		p.Workers = append(p.Workers, Worker{Machine: m, GPUs: 2})
	}
	mid := testJob("mid", 8, 100e6, 0.1)
	q := Placement{Job: mid, PS: 8, INA: true}
	for m := MachineID(8); m < 12; m++ {
		q.Workers = append(q.Workers, Worker{Machine: m, GPUs: 2})
	}
	for _, x := range []Placement{p, q} {
		if err := st.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	return st, testJob("next", 8, 100e6, 0.1)
}

func racksOf(c *Cluster, p Placement) map[int]int {
	rs := map[int]int{}
	for _, w := range p.Workers {
		rs[c.Machines[w.Machine].Rack] += w.GPUs
	}
	return rs
}

// NetPack fills the rack the 8-GPU job leaves whole-rack free space in (best fit), so the two
// empty racks stay whole for the 16-GPU jobs like the one running; netpack-v1, pricing only the
// harm to the running job's INA share, breaks an empty rack and leaves two 8-GPU fragments.
func TestFragmentationPriced(t *testing.T) {
	want := map[string]int{"netpack": 1, "netpack-v1": 2}
	for name, rack := range want {
		st, j := fragScene(t)
		pl, _ := NewPlacer(name, Options{})
		p, ok := PlaceOne(pl, st, j)
		if rs := racksOf(st.Cluster, p); !ok || len(rs) != 1 || rs[rack] != 8 {
			t.Errorf("%s placed the 8-GPU job on racks %v, want all 8 GPUs in rack %d", name, rs, rack)
		}
	}
}

// The price itself: filling a fragment lowers fragmentation, breaking a block that a job in
// demand needs raises it by the GPUs it strands, weighted by that size's share of the demand.
func TestFragDelta(t *testing.T) {
	st, j := fragScene(t)
	pl := &netpackPlacer{t: tracker{mode: Joint}}
	pl.Begin(st)
	w := pl.w
	fill := []Worker{{12, 2}, {13, 2}, {14, 2}, {15, 2}}  // rack 1's free machines
	split := []Worker{{16, 2}, {17, 2}, {18, 2}, {19, 2}} // half of empty rack 2
	// Demand: 16 + 8 running + the 8 being placed = 32 GPUs; 16-GPU jobs are half of it.
	if d := w.fragDelta(fill, j.GPUs); d != -8*0.5 {
		t.Errorf("filling rack 1's 8 free GPUs: delta %v, want -4 (8 GPUs a 16-GPU job could not use, weight 1/2)", d)
	}
	if d := w.fragDelta(split, j.GPUs); d != 8*0.5 {
		t.Errorf("taking 8 of empty rack 2's 16: delta %v, want +4", d)
	}
	// One GPU from empty rack 2 leaves 15 that a 16-GPU job cannot use (the rack no longer holds
	// one): 15 x 16/25 with the 1-GPU job in demand. The machine term stays 0: no size in demand
	// fits a machine but the 1-GPU job, and a machine with 1 free GPU still holds that.
	if d := w.fragDelta([]Worker{{16, 1}}, 1); d != 15*16.0/25 {
		t.Errorf("1 GPU from an empty rack: delta %v, want %v", d, 15*16.0/25)
	}
}
