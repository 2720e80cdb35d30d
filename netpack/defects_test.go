package netpack

import "testing"

// Regression tests for the placement defects of issue 15. Each failed on the code before the fix.

// (a) The in-rack DP kept at most 16 machines, so a job needing more than 16 machines' GPUs was
// split across racks even on an empty cluster.
func TestBigJobStaysInOneRack(t *testing.T) {
	c := mustUniform(t, 4, 64, 1)
	for _, name := range PolicyNames() {
		if name == "gpu-balance" || name == "flow-balance" || name == "tetris" {
			continue // they spread by design
		}
		pol, _ := NewPolicy(name, Options{})
		ps := pol.Schedule(NewState(c), []*Job{testJob("big", 32, 100e6, 0.2)})
		if len(ps) != 1 {
			t.Fatalf("%s: 32-GPU job not placed on an empty 256-GPU cluster", name)
		}
		racks := map[int]bool{}
		for _, w := range ps[0].Workers {
			racks[c.Machines[w.Machine].Rack] = true
		}
		if len(racks) != 1 {
			t.Errorf("%s: 32-GPU job on an empty 4x64x1 cluster spans %d racks, want 1", name, len(racks))
		}
	}
}

// (b) flow-balance and tetris put the PS anywhere in the cluster: single-machine jobs got a
// remote PS. Now every baseline's PS is in its workers' racks, and on the worker of a
// single-machine job.
func TestBaselinePSNearWorkers(t *testing.T) {
	c := mustUniform(t, 4, 4, 8)
	for _, name := range PolicyNames() {
		pol, _ := NewPolicy(name, Options{})
		st := NewState(c)
		// Machine 0 runs a local job: no streams, fewer free GPUs than the others.
		if err := st.Add(Placement{Job: testJob("bg", 4, 100e6, 0.2), Workers: []Worker{{Machine: 0, GPUs: 4}}, PS: 0}); err != nil {
			t.Fatal(err)
		}
		ps := pol.Schedule(st, []*Job{testJob("s", 2, 100e6, 0.2), testJob("a", 16, 100e6, 0.2), testJob("b", 24, 100e6, 0.2)})
		if len(ps) != 3 {
			t.Fatalf("%s placed %d of 3 jobs", name, len(ps))
		}
		for _, p := range ps {
			wr := map[int]bool{}
			for _, w := range p.Workers {
				wr[c.Machines[w.Machine].Rack] = true
			}
			if !wr[c.Machines[p.PS].Rack] {
				t.Errorf("%s: job %s has its PS on machine %d, outside its workers' racks %v", name, p.Job.ID, p.PS, wr)
			}
			if len(p.Workers) == 1 && p.PS != p.Workers[0].Machine {
				t.Errorf("%s: single-machine job %s has a remote PS on machine %d", name, p.Job.ID, p.PS)
			}
		}
	}
}

// (c) The knapsack's speed discount min(1, NIC/d) was 1 for every shipped model at 16 Gb/s
// NICs and more, so it admitted network-bound jobs as if they ran at full speed. Here four
// 2-GPU machines on 25G NICs without INA: an 8-GPU vgg16 job pushes three streams into its PS
// NIC and reaches a third of its speed; an 8-GPU resnet50 job does not saturate it. Only one
// fits; the knapsack must prefer resnet50 although vgg16 is older.
func TestKnapsackValueIsNetworkAware(t *testing.T) {
	c, err := Uniform(UniformSpec{Racks: 1, MachinesPerRack: 4, GPUsPerMachine: 2, NICGbps: 25})
	if err != nil {
		t.Fatal(err)
	}
	c.Racks[0].INAMemoryBytes = 0
	vgg, _ := Profile("vgg16")
	rn, _ := Profile("resnet50")
	older := &Job{ID: "vgg", GPUs: 8, Model: vgg, Iterations: 100}
	younger := &Job{ID: "rn", GPUs: 8, Model: rn, Iterations: 100}
	for _, name := range PolicyNames() {
		pol, _ := NewPolicy(name, Options{Admission: AdmitKnapsack})
		ps := pol.Schedule(NewState(c), []*Job{older, younger})
		if len(ps) != 1 || ps[0].Job.ID != "rn" {
			t.Errorf("%s with knapsack admission started %v, want only rn", name, ps)
		}
		fifo, _ := NewPolicy(name, Options{})
		if ps := fifo.Schedule(NewState(c), []*Job{older, younger}); len(ps) != 1 || ps[0].Job.ID != "vgg" {
			t.Errorf("%s with FIFO admission started %v, want only vgg (the older)", name, ps)
		}
	}
}

// (d) Only NetPack derived an ESA priority (from the job's true length); the baselines gave
// every job 0. Now the priority rule belongs to the policy composition and is the same for all.
func TestSamePriorityRuleForEveryPolicy(t *testing.T) {
	c := mustUniform(t, 2, 4, 2)
	j := &Job{ID: "x", GPUs: 4, Model: Model{Name: "m", GradientBytes: 1e8, ComputeSec: 0.2}, Iterations: 1000}
	for _, rule := range []PriorityRule{PriorityBySize, PriorityNone} {
		for _, name := range PolicyNames() {
			pol, _ := NewPolicy(name, Options{Priority: rule})
			ps := pol.Schedule(NewState(c), []*Job{j})
			if len(ps) != 1 || ps[0].Priority != rule.Of(j) {
				t.Errorf("%s under rule %v: got %v, want priority %d", name, rule, ps, rule.Of(j))
			}
		}
	}
	if PriorityBySize.Of(j) == 0 {
		t.Fatal("the size rule gave priority 0: the test cannot tell the rules apart")
	}
}
