package experiment

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/inapack/inapack/scheduler"
)

// mix is one validation experiment: jobs started together on fixed placements under one switch
// setting.
type mix struct {
	ID    int      `json:"id"`
	Group string   `json:"group"` // switch setting, e.g. "esa-16"
	Jobs  []mixJob `json:"jobs"`
	// Machine is what the machine and the switches did while the mix ran (nil in older results).
	Machine *machineUse `json:"machine,omitempty"`
}

// group is a switch setting the mixes of one emulated cluster share.
type group struct {
	Name    string `json:"name"`
	Release string `json:"release"` // esa | atp
	Preempt bool   `json:"preempt"`
	Slots   int    `json:"slots"`
}

// mixJob is one job of a mix: its pinned placement and its work.
type mixJob struct {
	Name       string   `json:"name"`
	Workers    []string `json:"workers"`
	PS         string   `json:"ps"`
	INA        bool     `json:"ina"`
	Priority   int      `json:"priority"`
	Iterations int      `json:"iterations"`
	Bytes      int      `json:"bytes"`
	ComputeSec float64  `json:"compute_sec"`
}

func (j *mixJob) submission() scheduler.Submission {
	s := scheduler.Submission{Name: j.Name, GPUs: len(j.Workers), Iterations: j.Iterations, BytesPerIteration: j.Bytes,
		ComputeSec: &j.ComputeSec, Pin: &scheduler.Pin{PS: j.PS, INA: &j.INA, Priority: &j.Priority}}
	s.Model.Name, s.Model.GradientBytes, s.Model.ComputeSec = "synthetic", float64(j.Bytes), j.ComputeSec
	for _, w := range j.Workers {
		s.Pin.Workers = append(s.Pin.Workers, scheduler.PinnedWorker{Host: w, GPUs: 1})
	}
	return s
}

// genMixes makes n mixes per group, deterministic in seed: 2..6 jobs each, fan-in 2..8, single-
// and cross-rack workers (one GPU per worker host), the PS on a host of no worker of its job, INA
// off for about one job in five, random ESA priorities where the group preempts. racks lists the
// hosts of each rack; gpus is each host's GPUs.
func genMixes(seed uint64, groups []group, perGroup int, racks [][]string, gpus int) []mix {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var all []string
	for _, r := range racks {
		all = append(all, r...)
	}
	var out []mix
	for _, g := range groups {
		for k := range perGroup {
			m := mix{ID: len(out), Group: g.Name}
			free := map[string]int{}
			for _, h := range all {
				free[h] = gpus
			}
			n := 2 + (k+len(out))%5
			for len(m.Jobs) < n {
				fan := 2 + rng.IntN(7)
				var pool []string
				if cross := fan > len(racks[0]) || rng.IntN(2) == 0; cross {
					pool = all
				} else {
					pool = racks[rng.IntN(len(racks))]
				}
				var cand []string
				for _, h := range pool {
					if free[h] > 0 {
						cand = append(cand, h)
					}
				}
				if len(cand) < fan {
					if fan == 2 {
						break // the cluster is full
					}
					continue
				}
				rng.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
				ws := slices.Clone(cand[:fan])
				slices.Sort(ws)
				var psCand []string
				for _, h := range pool {
					if !slices.Contains(ws, h) {
						psCand = append(psCand, h)
					}
				}
				if len(psCand) == 0 {
					for _, h := range all {
						if !slices.Contains(ws, h) {
							psCand = append(psCand, h)
						}
					}
				}
				for _, w := range ws {
					free[w]--
				}
				j := mixJob{Name: fmt.Sprintf("m%02dj%d", m.ID, len(m.Jobs)), Workers: ws, PS: psCand[rng.IntN(len(psCand))],
					INA: rng.IntN(5) != 0, Iterations: 20 + 5*rng.IntN(9), Bytes: 8192 * (1 + rng.IntN(4)), ComputeSec: 0.005}
				if g.Preempt {
					j.Priority = rng.IntN(256)
				}
				m.Jobs = append(m.Jobs, j)
			}
			out = append(out, m)
		}
	}
	return out
}
