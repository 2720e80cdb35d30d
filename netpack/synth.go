package netpack

import (
	"fmt"
	"math/rand/v2"
)

// itpGPUShares is the share of jobs by GPU count over the whole Microsoft ITP release (69,351
// jobs; /work/shared/traces/README.md, from ElasticFlow, ASPLOS'23).
var itpGPUShares = []struct {
	gpus  int
	share float64
}{{1, 83.2}, {2, 2.1}, {4, 3.4}, {8, 10.1}, {16, 0.55}, {32, 0.51}, {64, 0.10}}

// SyntheticJobs draws n jobs with ITP GPU demands, a shipped model chosen uniformly, and
// 1,000..20,000 iterations, submitted at t = 0; the same seed gives the same jobs.
func SyntheticJobs(seed uint64, n int) []*Job {
	rng := rand.New(rand.NewPCG(seed, 0x6e657470))
	names := ProfileNames()
	total := 0.0
	for _, s := range itpGPUShares {
		total += s.share
	}
	jobs := make([]*Job, 0, n)
	for i := 0; i < n; i++ {
		x := rng.Float64() * total
		g := itpGPUShares[len(itpGPUShares)-1].gpus
		for _, s := range itpGPUShares {
			if x < s.share {
				g = s.gpus
				break
			}
			x -= s.share
		}
		m, _ := Profile(names[rng.IntN(len(names))])
		jobs = append(jobs, &Job{ID: fmt.Sprintf("syn-%d", i), GPUs: g, Model: m, Iterations: 1000 + rng.IntN(19001)})
	}
	return jobs
}
