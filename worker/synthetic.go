package worker

// Synthetic fills out with rank's deterministic tensor for an iteration: integers in
// [-1e6, 1e6] determined by (seed, job, rank, iter). Every worker can compute every peer's tensor,
// so results are checked exactly (cmd/ina-worker, the end-to-end tests). Value i of rank r is
// a_i + (r+1)*b_i, with a_i and b_i drawn per (seed, job, iter, i): different for every rank,
// and their sum over the ranks costs one pass (SyntheticSum), however many workers there are.
func Synthetic(seed uint64, job uint16, rank, iter int, out []int32) {
	key := synthKey(seed, job, iter)
	for i := range out {
		a, b := synthAB(key, i)
		out[i] = int32(a + int64(rank+1)*b)
	}
}

// SyntheticSum is the exact element-wise sum of the Synthetic tensors of ranks 0..workers-1.
func SyntheticSum(seed uint64, job uint16, workers, iter int, out []int64) {
	n := int64(workers)
	key := synthKey(seed, job, iter)
	for i := range out {
		a, b := synthAB(key, i)
		out[i] = n*a + n*(n+1)/2*b
	}
}

// SyntheticWithSum is Synthetic and SyntheticSum of the same values in one pass (half the hashing
// of the two: a training loop's stand-in for compute should not crowd the all-reduce it times).
func SyntheticWithSum(seed uint64, job uint16, rank, workers, iter int, out []int32, sum []int64) {
	n := int64(workers)
	key := synthKey(seed, job, iter)
	for i := range out {
		a, b := synthAB(key, i)
		out[i] = int32(a + int64(rank+1)*b)
		sum[i] = n*a + n*(n+1)/2*b
	}
}

// synthKey is the hash of an iteration's draws, one per call: a value then costs one multiply.
func synthKey(seed uint64, job uint16, iter int) uint64 {
	return splitmix(seed ^ splitmix(uint64(job)<<48^uint64(iter)<<32))
}

// synthAB returns a in [-500000, 500000] and b in [-15000, 15000]: |a + 33b| <= 1e6 for the 32
// ranks a job may have. One multiply mixes the index into the iteration's key (Fibonacci
// hashing; the key is well mixed already) and two take the ranges from its high bits, so that the
// training loop's stand-in for compute stays small beside the all-reduce it times.
func synthAB(key uint64, i int) (a, b int64) {
	x := (key ^ uint64(i)) * 0x9e3779b97f4a7c15
	return int64((x>>32)*1_000_001>>32) - 500_000, int64((x&0xffffffff)*30_001>>32) - 15_000
}

// splitmix is SplitMix64's output function: a fast, well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
