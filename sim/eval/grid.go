package eval

import (
	"fmt"
	"strings"
)

// gridCell is one cell of the grid with its comparisons, paired by seed.
type gridCell struct {
	run, sep  *Run
	best      string
	gain, old ci // netpack and netpack-v1 against the best baseline
	joint     ci // netpack (joint estimation) against netpack with separate estimation
	perSeed   []float64
	jointSeed []float64
}

func (rep *Report) gridCells() []gridCell {
	var out []gridCell
	for i := range 32 {
		r, sep := rep.Runs[kGrid(i)], rep.Runs[kGridSep(i)]
		if r == nil || sep == nil {
			continue
		}
		bb := r.BestBaseline()
		out = append(out, gridCell{run: r, sep: sep, best: bb, gain: r.GainCI(bb), old: r.GainOfCI("netpack-v1", bb),
			joint: gainCI(r, "netpack", sep, "netpack"), perSeed: seedGains(r, "netpack", r, bb), jointSeed: seedGains(r, "netpack", sep, "netpack")})
	}
	return out
}

// seedGains are the per-seed reductions 1 - a/b of mean JCT.
func seedGains(a *Run, pa string, b *Run, pb string) []float64 {
	xa, xb := a.perSeed(pa, meanJCT), b.perSeed(pb, meanJCT)
	if len(xa) != len(xb) {
		return nil
	}
	g := make([]float64, len(xa))
	for i := range xa {
		g[i] = 1 - xa[i]/xb[i]
	}
	return g
}

// gridAxes name the grid's settings and read each from a cell's setting.
var gridAxes = []struct {
	name  string
	level func(g Grid, s Setting) bool // high level?
	show  func(s Setting) string
}{
	{"INA memory per ToR", func(g Grid, s Setting) bool { return s.MemoryBytes == g.Memories[1] }, func(s Setting) string { return fmt.Sprintf("%.0f KiB", s.MemoryBytes/1024) }},
	{"gradient scale", func(g Grid, s Setting) bool { return s.GradScale == g.GradScale[1] }, func(s Setting) string { return fmt.Sprintf("gradient x%g", s.GradScale) }},
	{"oversubscription", func(g Grid, s Setting) bool { return s.Oversub == g.Oversubs[1] }, func(s Setting) string { return fmt.Sprintf("%g:1", s.Oversub) }},
	{"GPUs per machine", func(g Grid, s Setting) bool { return s.GPUs == g.GPUs[1] }, func(s Setting) string { return fmt.Sprintf("%d GPUs/machine", s.GPUs) }},
	{"offered load", func(g Grid, s Setting) bool { return s.Load == g.Loads[1] }, func(s Setting) string { return fmt.Sprintf("load %g", s.Load) }},
}

// effect is the main effect of one axis on a per-seed figure: per seed, the mean over the cells at
// the high level minus the mean over those at the low level, with its interval over the seeds.
func (rep *Report) effect(cells []gridCell, axis int, fig func(gridCell) []float64) ci {
	g := rep.Cfg.Grid
	ns := len(rep.Cfg.Seeds)
	var per []float64
	for s := range ns {
		var hi, lo float64
		var nh, nl int
		for _, c := range cells {
			x := fig(c)
			if len(x) != ns {
				return tInterval(nil)
			}
			if gridAxes[axis].level(g, c.run.Setting) {
				hi += x[s]
				nh++
			} else {
				lo += x[s]
				nl++
			}
		}
		if nh == 0 || nl == 0 {
			return tInterval(nil)
		}
		per = append(per, hi/float64(nh)-lo/float64(nl))
	}
	return tInterval(per)
}

// gridSection is section 12: NetPack's gain over the best baseline across the grid.
func (rep *Report) gridSection(p func(string, ...any)) {
	cells := rep.gridCells()
	if len(cells) == 0 {
		return
	}
	g := rep.Cfg.Grid
	p("## 12. Where the network decides: a grid of settings\n\n")
	p("A two-level factorial over the five settings that decide how much placement can matter, around a cluster of %s: ", g.Base.Describe())
	p("INA memory per ToR (%.0f or %.0f KiB), the models' gradient bytes against the compute they overlap (x%g or x%g of the profiles), ToR oversubscription (%g:1 or %g:1), ",
		g.Memories[0]/1024, g.Memories[1]/1024, g.GradScale[0], g.GradScale[1], g.Oversubs[0], g.Oversubs[1])
	p("GPUs per machine (%d or %d, the same GPUs in all) and offered load (%g or %g). ", g.GPUs[0], g.GPUs[1], g.Loads[0], g.Loads[1])
	p("The half fraction 2^(5-1) (I = ABCDE: the 16 cells with an even number of high levels) keeps every main effect and two-setting interaction estimable. ")
	p("Each cell runs %d ITP-shaped synthetic jobs per seed (seeds %s) under every policy, and NetPack with separate estimation. ", g.Jobs, rep.seedList())
	p("Reductions of mean JCT, paired by seed, with 95%% intervals; *joint vs separate* is NetPack's mean JCT with joint estimation against the same with separate estimation.\n\n")
	p("| INA memory | gradient | oversub. | GPUs/machine | load | best baseline | netpack vs best | netpack-v1 vs best | joint vs separate |\n|---|---|---|---|---|---|---:|---:|---:|\n")
	for _, c := range cells {
		s := c.run.Setting
		var cols []string
		for _, a := range gridAxes {
			cols = append(cols, a.show(s))
		}
		p("| %s | %s | %s%s | %s | %s%s |\n", strings.Join(cols, " | "), c.best, pctCI(c.gain), star(c.gain), pctCI(c.old), pctCI(c.joint), star(c.joint))
	}
	p("\n\\* significant (the interval excludes 0).\n\n")
	p("Main effects: per seed, the mean over the 8 cells at the high level minus the mean over the 8 at the low level, with the interval over the seeds.\n\n")
	p("| setting | low → high | effect on netpack vs best | effect on joint vs separate |\n|---|---|---:|---:|\n")
	for k, a := range gridAxes {
		var lo, hi string
		for _, c := range cells {
			if a.level(g, c.run.Setting) {
				hi = a.show(c.run.Setting)
			} else {
				lo = a.show(c.run.Setting)
			}
		}
		eg := rep.effect(cells, k, func(c gridCell) []float64 { return c.perSeed })
		ej := rep.effect(cells, k, func(c gridCell) []float64 { return c.jointSeed })
		p("| %s | %s → %s | %s%s | %s%s |\n", a.name, lo, hi, pctCI(eg), star(eg), pctCI(ej), star(ej))
	}
	p("\n%s\n\n", rep.gridSummary())
}

func star(c ci) string {
	if c.above() || c.below() {
		return " \\*"
	}
	return ""
}

// gridSummary is the grid's finding in one paragraph: the range of NetPack's gain, where it is
// significant either way, and where joint estimation beats separate.
func (rep *Report) gridSummary() string {
	cells := rep.gridCells()
	if len(cells) == 0 {
		return ""
	}
	describe := func(c gridCell) string {
		var cols []string
		for _, a := range gridAxes {
			cols = append(cols, a.show(c.run.Setting))
		}
		return strings.Join(cols, ", ")
	}
	best, worst := cells[0], cells[0]
	var wins, losses, joint []string
	for _, c := range cells {
		if c.gain.mean > best.gain.mean {
			best = c
		}
		if c.gain.mean < worst.gain.mean {
			worst = c
		}
		switch {
		case c.gain.above():
			wins = append(wins, describe(c))
		case c.gain.below():
			losses = append(losses, describe(c))
		}
		if c.joint.above() {
			joint = append(joint, describe(c))
		}
	}
	list := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return "(" + strings.Join(xs, "); (") + ")"
	}
	out := fmt.Sprintf("Across the %d cells NetPack's reduction of mean JCT against the best baseline runs from %s (%s) to %s (%s). ",
		len(cells), pctCI(worst.gain), describe(worst), pctCI(best.gain), describe(best))
	out += fmt.Sprintf("Significantly better in %d cells: %s; significantly worse in %d: %s. ", len(wins), list(wins), len(losses), list(losses))
	if len(joint) == 0 {
		out += "Joint estimation beats separate estimation significantly in no cell."
	} else {
		out += fmt.Sprintf("Joint estimation beats separate estimation significantly in %d cells: %s.", len(joint), list(joint))
	}
	return out
}
