package netpack

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const gbps = 1e9 / 8 // bytes/s per Gbps

func mustUniform(t testing.TB, racks, machines, gpus int) *Cluster {
	t.Helper()
	c, err := Uniform(UniformSpec{Racks: racks, MachinesPerRack: machines, GPUsPerMachine: gpus})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testJob(id string, gpus int, gradBytes, computeSec float64) *Job {
	return &Job{ID: id, GPUs: gpus, Iterations: 100, Model: Model{Name: "m", GradientBytes: gradBytes, ComputeSec: computeSec}}
}

// oneGPUWorkers places one GPU on each machine listed.
func oneGPUWorkers(j *Job, ps MachineID, ina bool, ms ...MachineID) Placement {
	p := Placement{Job: j, PS: ps, INA: ina}
	for _, m := range ms {
		p.Workers = append(p.Workers, Worker{Machine: m, GPUs: 1})
	}
	j.GPUs = len(ms)
	return p
}

// randomPlacements builds n random valid placements on c (GPUs respected) with random models.
func randomPlacements(rng *rand.Rand, c *Cluster, n int) []Placement {
	st := NewState(c)
	var out []Placement
	for i := 0; i < n; i++ {
		k := 1 + rng.IntN(6)
		j := testJob(fmt.Sprintf("j%d", i), 0, float64(1+rng.IntN(500))*1e6, 0.02+rng.Float64()*0.3)
		p := Placement{Job: j, PS: MachineID(rng.IntN(len(c.Machines))), INA: rng.IntN(3) > 0}
		used := map[MachineID]bool{}
		for w := 0; w < k; w++ {
			m := MachineID(rng.IntN(len(c.Machines)))
			if used[m] || st.FreeGPUs(m) == 0 {
				continue
			}
			used[m] = true
			p.Workers = append(p.Workers, Worker{Machine: m, GPUs: 1})
		}
		if len(p.Workers) == 0 {
			continue
		}
		sortWorkers(p.Workers)
		j.GPUs = len(p.Workers)
		if st.Add(p) == nil {
			out = append(out, p)
		}
	}
	return out
}
