package experiment

import "math"

// pearson is the correlation coefficient of xs and ys (NaN with fewer than two points or no
// spread).
func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// mape is the mean absolute percentage error of predicted against measured, in percent.
func mape(measured, predicted []float64) float64 {
	var s float64
	n := 0
	for i := range measured {
		if measured[i] == 0 {
			continue
		}
		s += math.Abs(predicted[i]-measured[i]) / math.Abs(measured[i])
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return 100 * s / float64(n)
}
