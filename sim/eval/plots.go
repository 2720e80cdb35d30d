package eval

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/inapack/inapack/sim/plot"
	gplot "gonum.org/v1/plot"
)

// policies lists NetPack's placements first (netpack, then its earlier versions), then the
// baselines: the order of every figure and table.
func (rep *Report) policies() []string { return append(slices.Clone(rep.NetPacks), rep.Baselines...) }

// sweep is one axis of the evaluation: its runs in x order.
type sweep struct {
	name, axis, file string
	xs               []float64
	runs             []*Run
	logX             bool
}

func (rep *Report) sweeps() []sweep {
	cfg := &rep.Cfg
	var out []sweep
	add := func(s sweep, keys []string) {
		for _, k := range keys {
			s.runs = append(s.runs, rep.Runs[k])
		}
		out = append(out, s)
	}
	// around lists the runs of one parameter's values, the paper setting's value being the main run.
	around := func(vals []float64, paper float64, key func(float64) string) (ks []string) {
		for _, v := range vals {
			if v == paper {
				ks = append(ks, kMain)
			} else {
				ks = append(ks, key(v))
			}
		}
		return ks
	}
	scaled := func(vals []float64, f float64) []float64 {
		var out []float64
		for _, v := range vals {
			out = append(out, v*f)
		}
		return out
	}
	var gpus []float64
	for _, g := range cfg.GPUs {
		gpus = append(gpus, float64(g))
	}
	add(sweep{name: "offered load", axis: "offered load (GPU-time / capacity)", file: "sweep-load", xs: cfg.Loads},
		around(cfg.Loads, cfg.Paper.Load, kLoad))
	add(sweep{name: "INA memory per ToR", axis: "KiB of aggregator memory per ToR", file: "sweep-memory", xs: scaled(cfg.Memories, 1.0/1024), logX: true},
		around(cfg.Memories, cfg.Paper.MemoryBytes, kMem))
	add(sweep{name: "GPUs per machine", axis: "GPUs per machine (same GPUs in all)", file: "sweep-gpus", xs: gpus, logX: true},
		around(gpus, float64(cfg.Paper.GPUs), func(g float64) string { return kGPUs(int(g)) }))
	add(sweep{name: "ToR oversubscription", axis: "rack NICs : ToR uplink", file: "sweep-oversub", xs: cfg.Oversubs, logX: true},
		around(cfg.Oversubs, cfg.Paper.Oversub, kOver))
	var ks []string
	for _, m := range cfg.Sizes {
		ks = append(ks, kSize(m))
	}
	s := sweep{name: "cluster size (synthetic)", axis: "machines", file: "sweep-size", logX: true}
	for _, k := range ks {
		r := rep.Runs[k]
		s.xs = append(s.xs, float64(r.Setting.Racks*r.Setting.Machines))
	}
	add(s, ks)
	return out
}

func (rep *Report) loadKey(l float64) string {
	if l == rep.Cfg.Paper.Load {
		return kMain
	}
	return kLoad(l)
}

// plots draws the figures the report links.
func (rep *Report) plots() error {
	dir := rep.Cfg.ImgDir
	main := rep.Runs[kMain]
	where := fmt.Sprintf("%s, %s, load %g", filepath.Base(rep.Cfg.TraceName), main.Setting.Describe(), main.Setting.Load)
	var series []plot.Series
	var names []string
	var means []float64
	for _, pol := range rep.policies() {
		x := main.Result(pol)
		var jcts []float64
		for i := range x.Jobs {
			if x.Jobs[i].Submit >= x.Warmup {
				jcts = append(jcts, x.Jobs[i].JCT()/3600)
			}
		}
		series = append(series, plot.Series{Name: pol, Values: jcts})
		names = append(names, pol)
		means = append(means, main.Mean(pol)/3600) // over the seeds, like the knapsack bar
	}
	if k := rep.Runs[kKnapsack]; k != nil {
		names = append(names, "netpack+ks")
		means = append(means, k.Mean("netpack")/3600)
	}
	cdf, err := plot.CDF("JCT CDF, FIFO admission, first seed\n"+where, "JCT (hours)", series)
	if err != nil {
		return err
	}
	if err := rep.save(cdf, dir, "jct-cdf"); err != nil {
		return err
	}
	bars, err := plot.Bars("Mean JCT (FIFO admission; netpack+ks: NetPack with its knapsack)\n"+where, "hours", names, means)
	if err != nil {
		return err
	}
	if err := rep.save(bars, dir, "jct-mean"); err != nil {
		return err
	}
	for _, s := range rep.sweeps() {
		var ser []plot.Series
		for _, pol := range rep.policies() {
			var v []float64
			for _, r := range s.runs {
				v = append(v, r.Mean(pol)/3600)
			}
			ser = append(ser, plot.Series{Name: pol, Values: v})
		}
		title := fmt.Sprintf("Mean JCT by %s\n%s", s.name, rep.sweepWhere(s))
		p, err := plot.Lines(title, s.axis, "mean JCT (hours)", s.xs, ser, s.logX)
		if err != nil {
			return err
		}
		if err := rep.save(p, dir, s.file); err != nil {
			return err
		}
	}
	// The estimator's error by load.
	var xs, mape, bias []float64
	for _, l := range rep.Cfg.Loads {
		r := rep.Runs[rep.loadKey(l)].Result("netpack")
		xs = append(xs, l)
		mape = append(mape, 100*r.Summary.EstMAPE)
		bias = append(bias, 100*r.Summary.EstBias)
	}
	p, err := plot.Lines("NetPack's estimator against the simulator, NetPack's jobs\n"+where,
		"offered load", "per-job iteration rate error (%)", xs, []plot.Series{{Name: "mean absolute % error", Values: mape}, {Name: "mean signed % error (bias)", Values: bias}}, false)
	if err != nil {
		return err
	}
	return rep.save(p, dir, "estimator-error")
}

func (rep *Report) sweepWhere(s sweep) string {
	if s.file == "sweep-size" {
		return fmt.Sprintf("synthetic ITP-shaped, racks of %d, %gG %g:1, load %g", rep.Cfg.SizeRack, rep.Cfg.Paper.NICGbps, rep.Cfg.Paper.Oversub, rep.Cfg.Paper.Load)
	}
	return filepath.Base(rep.Cfg.TraceName) + "; otherwise " + rep.Cfg.Paper.Describe() + fmt.Sprintf(", load %g", rep.Cfg.Paper.Load)
}

func (rep *Report) save(p *gplot.Plot, dir, name string) error {
	rep.Images = append(rep.Images, name)
	return plot.Save(p, filepath.Join(dir, name))
}
