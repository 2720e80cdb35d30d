package eval

import (
	"fmt"
	"slices"
	"time"
)

// verdictBatch is how many seeds a comparison point gets at a time while its verdict is open.
const verdictBatch = 5

// open reports whether a verdict interval is too wide to stand: wider than ±halfWidth and
// excluding 0 on neither side. The rule looks at the interval's width and whether it excludes 0
// either way, never at which way the mean leans, so it does not stop sampling when a point
// happens to look good (optional stopping), and its repeated looks leave the 95% nominal.
func open(g ci, halfWidth float64) bool {
	return g.n >= 2 && g.half > halfWidth && !g.above() && !g.below()
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
// open (Config.VerdictHalfWidth) under further seeds, verdictBatch at a time, until it is closed
// or has VerdictSeeds in all. The added seeds follow the largest of Seeds, the same for every
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
			for s := range min(verdictBatch, cfg.VerdictSeeds-g.n) {
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
		cfg.logf("verdict: %d open point(s), %d more seed(s) each at most, %.1f s", len(points), verdictBatch, time.Since(t0).Seconds())
	}
}
