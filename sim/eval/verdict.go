package eval

import (
	"fmt"
	"slices"
	"time"
)

// verdictBatch is the fewest seeds a comparison point gets at a time while its verdict is open.
const verdictBatch = 5

// batch is how many seeds a point with n gets next while its verdict is open: a quarter more, so
// a point that needs hundreds is looked at a dozen times, not once per 5 seeds (every look is a
// chance to stop on noise).
func batch(n int) int { return max(verdictBatch, n/4) }

// lossMargin is the line between a tie and a loss: a mean JCT more than 1% above the
// best baseline's.
const lossMargin = 0.01

// open reports whether a verdict interval is too wide to stand: it reaches the loss line
// (-lossMargin) on both sides, so more seeds could move the mean across it and turn a tie into a
// loss or back; or it is wider than ±halfWidth and excludes 0 on neither side. The rule looks at
// the interval's width and where the verdict's two lines (0 and -1%) fall in it, never at which
// way the mean leans, so it does not stop sampling when a point happens to look good (optional
// stopping).
func open(g ci, halfWidth float64) bool {
	if g.n < 2 {
		return false
	}
	straddlesLoss := g.lo() < -lossMargin && g.hi() > -lossMargin
	return straddlesLoss || g.half > halfWidth && !g.above() && !g.below()
}

// verdictGain is NetPack's reduction of mean JCT against policy best over every seed of the
// verdict: the experiment's seeds and any refine added.
func (r *Run) verdictGain(best string) ci {
	n, b := r.Verdict["netpack"], r.Verdict[best]
	if len(n) == 0 || len(n) != len(b) {
		return r.GainCI(best)
	}
	return reduction(pairedRatio(n, b))
}

// refine reruns, for NetPack and its best baseline only, each comparison point whose verdict is
// open (Config.VerdictHalfWidth) under further seeds, batch(n) at a time, until it is closed or
// has VerdictSeeds in all. The added seeds follow the largest of Seeds, the same for every
// point, so the result does not depend on the order runs finish in; every other figure keeps
// the experiment's own seeds.
func (rep *Report) refine(es []exp) error {
	cfg := &rep.Cfg
	if cfg.VerdictHalfWidth <= 0 || cfg.VerdictSeeds <= len(cfg.Seeds) {
		return nil
	}
	first := slices.Max(cfg.Seeds) + 1
	type task struct {
		r      *Run
		e      exp
		best   string
		seed   uint64
		result [2]float64
		err    error
	}
	for {
		var tasks []*task
		for _, e := range es {
			r := rep.Runs[e.key]
			best := r.BestBaseline()
			if e.source == "grid" || r.Result("netpack") == nil || best == "" {
				continue
			}
			g := r.verdictGain(best)
			if !open(g, cfg.VerdictHalfWidth) || g.n >= cfg.VerdictSeeds {
				continue
			}
			if r.Verdict == nil {
				r.Verdict = map[string][]float64{"netpack": r.perSeed("netpack", meanJCT), best: r.perSeed(best, meanJCT)}
			}
			for s := range min(batch(g.n), cfg.VerdictSeeds-g.n) {
				at := g.n + s
				tasks = append(tasks, &task{r: r, e: e, best: best, seed: first + uint64(at-len(cfg.Seeds))})
			}
		}
		if len(tasks) == 0 {
			return nil
		}
		t0 := time.Now()
		parallel(cfg.Workers, len(tasks), func(i int) {
			t := tasks[i]
			w, _, _, err := cfg.workload(t.e, t.seed)
			if err != nil {
				t.err = fmt.Errorf("%s, seed %d: %w", t.e.label, t.seed, err)
				return
			}
			for k, p := range []string{"netpack", t.best} {
				res, err := w.Run(p, nil)
				if err != nil {
					t.err = fmt.Errorf("%s, seed %d, %s: %w", t.e.label, t.seed, p, err)
					return
				}
				t.result[k] = meanJCT(res)
			}
		})
		points := map[*Run]bool{}
		for _, t := range tasks {
			if t.err != nil {
				return t.err
			}
			for k, p := range []string{"netpack", t.best} {
				t.r.Verdict[p] = append(t.r.Verdict[p], t.result[k]) // tasks are in seed order
			}
			points[t.r] = true
		}
		cfg.logf("verdict: %d open point(s), %d more seed(s) in all, %.1f s", len(points), len(tasks), time.Since(t0).Seconds())
	}
}
