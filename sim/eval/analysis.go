package eval

import (
	"fmt"
	"math"
	"strings"

	"github.com/inapack/inapack/sim"
)

// stats are the per-run figures the report explains results with (counted jobs only).
type stats struct {
	jobs       int
	queue, run float64 // mean queueing delay and mean run time (start to end), seconds
	netJobs    int     // jobs whose workers span machines
	netRun     float64 // their mean run time, seconds
	netQueue   float64 // their mean queueing delay, seconds
	multiRack  int
	rackSpan   float64 // mean racks per multi-rack job
	ina        float64
	gpuUtil    float64
	uplink     float64
}

func statsOf(r *sim.Result) stats {
	s := stats{ina: r.Summary.INAFraction, gpuUtil: r.Summary.GPUUtil, uplink: r.Summary.UplinkUtil, multiRack: r.Summary.MultiRackJobs}
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Submit < r.Warmup {
			continue
		}
		s.jobs++
		s.queue += j.Queue()
		s.run += j.End - j.Start
		if j.Racks > 1 {
			s.rackSpan += float64(j.Racks)
		}
		if j.Machines > 1 {
			s.netJobs++
			s.netRun += j.End - j.Start
			s.netQueue += j.Queue()
		}
	}
	if s.jobs > 0 {
		s.queue /= float64(s.jobs)
		s.run /= float64(s.jobs)
	}
	if s.multiRack > 0 {
		s.rackSpan /= float64(s.multiRack)
	}
	if s.netJobs > 0 {
		s.netRun /= float64(s.netJobs)
		s.netQueue /= float64(s.netJobs)
	}
	return s
}

// why explains, from the two runs' figures, where NetPack's mean JCT differs from another
// policy's: queueing or running, and the placement figures that go with it.
func why(np, other *sim.Result) string {
	a, b := statsOf(np), statsOf(other)
	dq, dr := a.queue-b.queue, a.run-b.run
	var parts []string
	switch {
	case math.Abs(dq) >= math.Abs(dr):
		parts = append(parts, fmt.Sprintf("mostly queueing: mean wait %.2f h vs %.2f h (run time %.2f vs %.2f h)", a.queue/3600, b.queue/3600, a.run/3600, b.run/3600))
	default:
		parts = append(parts, fmt.Sprintf("mostly running: mean run time %.2f h vs %.2f h (wait %.2f vs %.2f h)", a.run/3600, b.run/3600, a.queue/3600, b.queue/3600))
	}
	if a.netJobs > 0 && b.netJobs > 0 {
		parts = append(parts, fmt.Sprintf("multi-machine jobs (%d vs %d) run %.2f h vs %.2f h and wait %.2f h vs %.2f h",
			a.netJobs, b.netJobs, a.netRun/3600, b.netRun/3600, a.netQueue/3600, b.netQueue/3600))
		switch {
		case b.netRun > 1.05*a.netRun && b.queue > a.queue:
			parts = append(parts, "the other's slower multi-machine jobs hold their GPUs longer, so the queue grows behind them")
		case a.netRun > 1.05*b.netRun && a.queue > b.queue:
			parts = append(parts, "NetPack's slower multi-machine jobs hold their GPUs longer, so the queue grows behind them")
		case a.netQueue > 1.05*b.netQueue && a.netRun <= b.netRun*1.01:
			parts = append(parts, "NetPack's multi-machine jobs run no slower but wait longer: its placements leave free GPUs in shapes the next large jobs fit worse")
		}
	}
	if a.multiRack != b.multiRack || math.Abs(a.rackSpan-b.rackSpan) >= 0.05 {
		parts = append(parts, fmt.Sprintf("%d vs %d jobs spread over racks, %.1f vs %.1f racks each", a.multiRack, b.multiRack, a.rackSpan, b.rackSpan))
	}
	if math.Abs(a.ina-b.ina) >= 0.02 {
		parts = append(parts, fmt.Sprintf("%.0f%% vs %.0f%% of pushed chunks aggregated", 100*a.ina, 100*b.ina))
	}
	if math.Abs(a.gpuUtil-b.gpuUtil) >= 0.01 {
		parts = append(parts, fmt.Sprintf("GPU utilisation %.0f%% vs %.0f%%", 100*a.gpuUtil, 100*b.gpuUtil))
	}
	return strings.Join(parts, "; ")
}

// pct formats a fraction as a whole percentage (n/a for NaN).
func pct(x float64) string { return pctDigits(x, 0) }

// pct1 is pct with one decimal: intervals of a few tenths of a percent must stay visible.
func pct1(x float64) string { return pctDigits(x, 1) }

// pctDigits formats a fraction as a percentage with d decimals; what rounds to zero is 0, unsigned.
func pctDigits(x float64, d int) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case math.Abs(x) < 0.5*math.Pow(10, -float64(d))/100:
		x = 0
	}
	return fmt.Sprintf("%.*f%%", d, 100*x)
}

func hours(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", x/3600)
}

// meanGainCI is NetPack's reduction averaged over the baselines, per seed, with its interval.
func (rep *Report) meanGainCI(r *Run) ci {
	var per []float64
	for s := range r.Seeds {
		np := r.seedResult(s, "netpack")
		g, n := 0.0, 0
		for _, b := range rep.Baselines {
			if x := r.seedResult(s, b); x != nil && np != nil {
				g += 1 - np.Summary.MeanJCT/x.Summary.MeanJCT
				n++
			}
		}
		if n == 0 {
			return tInterval(nil)
		}
		per = append(per, g/float64(n))
	}
	return tInterval(per)
}

func (rep *Report) maxGain(r *Run) (float64, string) {
	m, who := math.Inf(-1), ""
	for _, b := range rep.Baselines {
		if g := r.Gain(b); g > m {
			m, who = g, b
		}
	}
	return m, who
}

// correlation is Pearson's r of the estimator's against the simulator's per-job iteration rates,
// over counted network jobs of a run with the estimator measured; the rates are normalised by
// each job's compute-bound rate so that the spread of models does not make r look good.
func correlation(r *sim.Result, computeSec map[string]float64) (float64, int) {
	var xs, ys []float64
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if j.Submit < r.Warmup || j.SimIterPerSec <= 0 || j.EstIterPerSec <= 0 {
			continue
		}
		c := computeSec[j.Model]
		xs = append(xs, j.EstIterPerSec*c)
		ys = append(ys, j.SimIterPerSec*c)
	}
	n := float64(len(xs))
	if n < 3 {
		return math.NaN(), len(xs)
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i] / n
		my += ys[i] / n
	}
	var sxy, sxx, syy float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
		syy += (ys[i] - my) * (ys[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy), len(xs)
}
