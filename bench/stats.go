package bench

import (
	"math"
	"slices"
)

// quantile of sorted values, interpolating between the closest ranks (R's type 7, numpy's
// default): the median of 5 values is the third, its quartiles the second and the fourth.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// minCoverage is the confidence the median's interval must reach where the number of rounds
// allows it: 5 rounds give at most 94% (their range), so benchstat's 95% would need 6.
const minCoverage = 0.90

// spread is a median with its confidence interval [lo, hi].
type spread struct{ med, lo, hi float64 }

// spreadOf is the median of v with its distribution-free confidence interval: the order
// statistics x(k) and x(n+1-k) hold the median with probability 1 - 2 P(Binomial(n, 1/2) < k),
// whatever the distribution (as benchstat's); k is the largest whose coverage is at least
// minCoverage, or 1 (the range) where no k reaches it. For 5 values the interval is their range,
// at 94%; their interquartile range, used before, held the median only 62% of the time, so two
// runs of the same code on the same machine often failed to overlap.
func spreadOf(v []float64) spread {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	k := medianRank(n)
	return spread{quantile(s, 0.5), s[k-1], s[n-k]}
}

// medianRank is the k of n values' median interval [x(k), x(n+1-k)]: the largest whose coverage
// is at least minCoverage, or 1.
func medianRank(n int) int {
	k := 1
	for k+1 <= (n+1)/2 && medianCoverage(n, k+1) >= minCoverage {
		k++
	}
	return k
}

// medianCoverage is the probability that [x(k), x(n+1-k)] of n values holds their distribution's
// median: 1 - 2 P(Binomial(n, 1/2) <= k-1).
func medianCoverage(n, k int) float64 {
	tail, c := 0.0, 1.0 // c = C(n, i)
	for i := 0; i < k; i++ {
		tail += c
		c = c * float64(n-i) / float64(i+1)
	}
	return max(0, 1-2*tail/math.Pow(2, float64(n)))
}

// rel is the interval's width relative to the median.
func (s spread) rel() float64 {
	if s.med == 0 {
		return math.Inf(1)
	}
	return (s.hi - s.lo) / math.Abs(s.med)
}
