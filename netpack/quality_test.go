package netpack

import (
	"fmt"
	"testing"
)

// speedWeightedGPUs runs rounds of arrivals (synthetic ITP-shaped jobs, half doubled in size and
// with halved compute time to make them network-heavy) and deterministic departures, and returns
// the mean over rounds of Σ GPUs x (estimated flow / compute-bound flow) of the running jobs.
func speedWeightedGPUs(t *testing.T, c *Cluster, pol Policy, rounds int) float64 {
	t.Helper()
	st := NewState(c)
	var waiting []*Job
	total := 0.0
	for round := 0; round < rounds; round++ {
		for i, j := range SyntheticJobs(uint64(round), 90) {
			j.ID = fmt.Sprint(round, "-", j.ID)
			if i%2 == 0 {
				j.GPUs *= 2
				j.Model.ComputeSec /= 2
			}
			waiting = append(waiting, j)
		}
		started := map[string]bool{}
		for _, p := range pol.Schedule(st, waiting) {
			if err := st.Add(p); err != nil {
				t.Fatal(err)
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
		for i, r := range Estimate(c, st.Running, Joint) {
			m := st.Running[i].Job.Model
			total += float64(st.Running[i].Job.GPUs) * r.FlowBps / (m.GradientBytes / m.ComputeSec)
		}
		for i, r := range st.Running {
			if (i+round)%3 == 0 {
				st.Remove(r.Job.ID)
			}
		}
	}
	return total / float64(rounds)
}

// TestNetPackBeatsNetworkBlindBaselines is a regression check on placement quality: on a 2:1
// oversubscribed cluster NetPack must keep more GPUs at full speed than the policies that ignore
// the network (consolidation, which also keeps traffic local, is reported but not asserted).
func TestNetPackBeatsNetworkBlindBaselines(t *testing.T) {
	c := mustUniform(t, 8, 16, 4)
	np, _ := NewPolicy("netpack", Options{})
	mine := speedWeightedGPUs(t, c, np, 20)
	for _, name := range []string{"gpu-balance", "flow-balance", "min-frag", "tetris", "gandiva"} {
		pol, _ := NewPolicy(name, Options{})
		theirs := speedWeightedGPUs(t, c, pol, 20)
		t.Logf("netpack %.1f, %s %.1f speed-weighted GPUs", mine, name, theirs)
		if name != "gandiva" && mine < theirs {
			t.Errorf("netpack %.1f below %s %.1f", mine, name, theirs)
		}
	}
}

// TestNetPackUsesScarceINA: with little INA memory (64 KiB held 50 µs: 1.3 GB/s per ToR), NetPack
// with INA must do at least as well as NetPack with INA disabled and as the network-blind baselines.
func TestNetPackUsesScarceINA(t *testing.T) {
	c, err := Uniform(UniformSpec{Racks: 8, MachinesPerRack: 16, GPUsPerMachine: 4, INAMemoryBytes: 65536, RTTSec: 50e-6})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, o Options) float64 {
		pol, _ := NewPolicy(name, o)
		return speedWeightedGPUs(t, c, pol, 20)
	}
	mine := run("netpack", Options{})
	noINA := run("netpack", Options{NoINA: true})
	sep := run("netpack", Options{Mode: Separate})
	t.Logf("netpack %.1f, netpack-noina %.1f, netpack-separate %.1f", mine, noINA, sep)
	if mine < noINA {
		t.Errorf("INA made NetPack worse: %.1f < %.1f", mine, noINA)
	}
	for _, name := range []string{"gpu-balance", "flow-balance", "min-frag", "tetris"} {
		if theirs := run(name, Options{}); mine < theirs {
			t.Errorf("netpack %.1f below %s %.1f", mine, name, theirs)
		}
	}
}
