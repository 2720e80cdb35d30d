package eval

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ci is a mean over seeds with the half-width of its 95% Student-t interval (NaN with fewer than
// two seeds: one draw says nothing about the spread).
type ci struct {
	mean, half float64
	n          int
}

// tInterval is the 95% t-interval of xs, taken as independent draws (one per seed).
func tInterval(xs []float64) ci {
	n := len(xs)
	if n == 0 {
		return ci{math.NaN(), math.NaN(), 0}
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(n)
	if n < 2 {
		return ci{m, math.NaN(), n}
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	sd := math.Sqrt(v / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return ci{m, t * sd / math.Sqrt(float64(n)), n}
}

func (c ci) lo() float64 { return c.mean - c.half }
func (c ci) hi() float64 { return c.mean + c.half }

// above and below say whether the whole interval lies above or below zero (significant at 5%).
func (c ci) above() bool { return c.n >= 2 && c.lo() > 0 }
func (c ci) below() bool { return c.n >= 2 && c.hi() < 0 }

// sig is "yes" when the interval excludes zero.
func (c ci) sig() string {
	if c.above() || c.below() {
		return "yes"
	}
	return "no"
}

// pctCI formats a fraction with its interval: "3% ± 1%" (without the ± for a single seed).
func pctCI(c ci) string {
	if math.IsNaN(c.half) {
		return pct(c.mean)
	}
	return fmt.Sprintf("%s ± %s", pct1(c.mean), pct1(c.half))
}

// hoursCI formats a mean in hours with its interval.
func hoursCI(c ci) string {
	if math.IsNaN(c.half) {
		return hours(c.mean)
	}
	return fmt.Sprintf("%s ± %.2f", hours(c.mean), c.half/3600)
}

// ratioText formats a ratio with its interval: "1.67x ± 0.12".
func ratioText(c ci) string {
	if math.IsNaN(c.half) {
		return fmt.Sprintf("%.2fx", c.mean)
	}
	return fmt.Sprintf("%.2fx ± %.2f", c.mean, c.half)
}
