package eval

import (
	"fmt"
	"io"

	"github.com/inapack/inapack/sim"
)

// point is one comparison of NetPack against the baselines under one admission rule: NetPack's
// and its earlier version's reductions of mean JCT against the best baseline, paired by seed
// (NetPack's over the verdict's seeds, verdict.go).
type point struct {
	run       *Run
	best      string
	gain, old ci // netpack and netpack-v1 against best (old: NaN if netpack-v1 did not run)
	newVsOld  ci // netpack against netpack-v1
}

// verdict classes a point by the rule: a loss is a mean JCT more than 1% above the best
// baseline's (said to be not significant when its interval reaches 0); a win is a reduction whose
// interval lies above 0; the rest are ties.
func (pt point) verdict() string { return verdict(pt.gain) }

func verdict(g ci) string {
	switch {
	case g.mean < -lossMargin && g.below():
		return "loss"
	case g.mean < -lossMargin:
		return "loss, not significant"
	case g.above():
		return "win"
	case g.below():
		return "tie (significantly worse, within 1%)"
	}
	return "tie"
}

func (rep *Report) pointOf(r *Run) point {
	bb := r.BestBaseline()
	pt := point{run: r, best: bb, gain: r.verdictGain(bb), old: r.GainOfCI("netpack-v1", bb), newVsOld: r.GainOfCI("netpack", "netpack-v1")}
	return pt
}

// allPoints are the comparison points among the runs there are, in experiment order: every run
// with NetPack and at least one baseline.
func (rep *Report) allPoints() []point {
	var out []point
	for _, k := range rep.Order {
		r := rep.Runs[k]
		if r.Result("netpack") != nil && r.BestBaseline() != "" {
			out = append(out, rep.pointOf(r))
		}
	}
	return out
}

// Points prints the comparison points as a plain table (netpack evaluate --only).
func (rep *Report) Points(w io.Writer) error {
	fmt.Fprintf(w, "%-62s %-13s %8s %8s %-18s %5s %-18s %-18s %s\n", "experiment", "best", "best h", "netpack", "netpack vs best", "seeds", "netpack-v1 vs best", "netpack vs v1", "verdict")
	for _, pt := range rep.allPoints() {
		fmt.Fprintf(w, "%-62s %-13s %8s %8s %-18s %5d %-18s %-18s %s\n", pt.run.Label, pt.best, hours(pt.run.Mean(pt.best)), hours(pt.run.Mean("netpack")),
			pctCI(pt.gain), pt.gain.n, pctCI(pt.old), pctCI(pt.newVsOld), pt.verdict())
		if rep.Cfg.Verbose {
			for _, pol := range rep.policies() {
				fmt.Fprintf(w, "    %-14s %s h, queue %s h\n", pol, hoursCI(pt.run.MeanCI(pol)), hours(pt.run.avg(pol, func(x *sim.Result) float64 { return x.Summary.MeanQueue })))
			}
		}
	}
	return nil
}

// tally counts points by verdict on the reduction g picks (NetPack's or netpack-v1's).
func (rep *Report) tally(pts []point, g func(point) ci) (wins, ties, sigTies, losses, sigLosses int) {
	for _, pt := range pts {
		switch v := verdict(g(pt)); v {
		case "win":
			wins++
		case "loss", "loss, not significant":
			losses++
			if v == "loss" {
				sigLosses++
			}
		default:
			ties++
			if v != "tie" {
				sigTies++
			}
		}
	}
	return
}
