package main

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

// spread is a median with its interquartile range.
type spread struct{ med, q1, q3 float64 }

func spreadOf(v []float64) spread {
	s := slices.Clone(v)
	slices.Sort(s)
	return spread{quantile(s, 0.5), quantile(s, 0.25), quantile(s, 0.75)}
}

// rel is the interquartile range relative to the median.
func (s spread) rel() float64 {
	if s.med == 0 {
		return math.Inf(1)
	}
	return (s.q3 - s.q1) / math.Abs(s.med)
}
