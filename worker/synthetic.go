package worker

import "math/rand/v2"

// Synthetic fills out with rank's deterministic tensor for an iteration: integers in
// [-1e6, 1e6] drawn from (seed, job, rank, iter). Every worker can compute every peer's tensor, so
// results are checked exactly (cmd/ina-worker, the end-to-end tests).
func Synthetic(seed uint64, job uint16, rank, iter int, out []int32) {
	r := rand.New(rand.NewPCG(seed, uint64(job)<<40|uint64(rank)<<20|uint64(iter)))
	for i := range out {
		out[i] = r.Int32N(2_000_001) - 1_000_000
	}
}

// SyntheticSum is the exact element-wise sum of the Synthetic tensors of ranks 0..workers-1.
func SyntheticSum(seed uint64, job uint16, workers, iter int, out []int64) {
	clear(out)
	t := make([]int32, len(out))
	for r := range workers {
		Synthetic(seed, job, r, iter, t)
		for i, v := range t {
			out[i] += int64(v)
		}
	}
}
