// Package eval runs the project's evaluation (NetPack against the baselines on a trace, INA off,
// joint vs separate estimation, cluster sizes, ESA vs ATP) and renders it as Markdown.
package eval

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
	"github.com/inapack/inapack/sim/plot"
	"github.com/inapack/inapack/sim/trace"
)

// Config selects the workload and how far the evaluation goes.
type Config struct {
	Trace     *trace.Trace
	TraceName string // shown in the report (e.g. the file name)
	Racks     int    // racks of the trace cluster (16 as in NetPack's simulator)
	Machines  int    // machines per rack
	GPUs      int    // GPUs per machine
	Interval  float64
	Sizes     []int   // machine counts of the scale sweep
	JobsPerM  float64 // synthetic jobs per machine in the sweep
	MaxJobs   int     // cap on synthetic jobs per size (keeps the largest sizes tractable)
	Seed      uint64
	Memory    MemoryBound // the switch-memory-bound experiment (Seeds 0 skips it)
	ImgDir    string      // where plots are written
	ImgLink   string      // how the Markdown refers to ImgDir
	Log       io.Writer   // one line per finished experiment
}

// Links is one network configuration of the evaluation.
type Links struct {
	Name    string
	NICGbps float64
	Oversub float64
}

// The two link configurations: the netpack default (100G hosts, 2:1 ToRs) and a
// network-constrained one (25G hosts, 4:1 ToRs) where placement matters more.
var (
	Roomy       = Links{"100G NICs, 2:1 ToR", 100, 2}
	Constrained = Links{"25G NICs, 4:1 ToR", 25, 4}
)

// ScarceATP keys the joint-vs-separate run with constrained links, ATP slots and a quarter of
// the memory (SlotRuns["atp-scarce"] holds its joint counterpart).
const ScarceATP = "25G NICs, 4:1 ToR, 64 KiB, ATP slots"

// Run is one compare: policies on one workload.
type Run struct {
	Label   string
	Setup   sim.Setup
	Jobs    int
	Results []*sim.Result
	Wall    time.Duration
}

// Mean returns a policy's mean JCT (NaN if absent).
func (r *Run) Mean(policy string) float64 {
	for _, x := range r.Results {
		if x.Policy == policy {
			return x.Summary.MeanJCT
		}
	}
	return math.NaN()
}

// Gain is NetPack's reduction of mean JCT against a policy: 1 - netpack / other.
func (r *Run) Gain(other string) float64 { return 1 - r.Mean("netpack")/r.Mean(other) }

// BestBaseline is the baseline with the lowest mean JCT.
func (r *Run) BestBaseline() string {
	best, bm := "", math.Inf(1)
	for _, x := range r.Results {
		if x.Policy != "netpack" && x.Summary.MeanJCT < bm {
			best, bm = x.Policy, x.Summary.MeanJCT
		}
	}
	return best
}

// Report is every run of the evaluation.
type Report struct {
	Cfg       Config
	Trace     map[string]*Run // by link config name
	NoINA     map[string]*Run
	Separate  map[string]*Run // netpack with the separate estimator, by link config name or ScarceATP
	Scale     []*Run
	SlotRuns  map[string]*Run // "esa" / "atp" / "esa-scarce" / "atp-scarce"
	Mem       map[memKey]*Run // the memory-bound experiment
	Baselines []string
	Images    []string
}

func (c *Config) logf(format string, a ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", a...)
	}
}

func (c *Config) cluster(racks, machines int, l Links) (*netpack.Cluster, error) {
	cl, err := netpack.Uniform(netpack.UniformSpec{Racks: racks, MachinesPerRack: machines, GPUsPerMachine: c.GPUs})
	if err != nil {
		return nil, err
	}
	return cl, sim.SetLinks(cl, l.NICGbps, l.Oversub)
}

func (c *Config) compare(label string, s sim.Setup, tr *trace.Trace, policies []string) (*Run, error) {
	start := time.Now()
	w, err := sim.Prepare(s, tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	res, err := w.RunAll(policies, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	r := &Run{Label: label, Setup: s, Jobs: len(w.Jobs), Results: res, Wall: time.Since(start)}
	c.logf("eval: %-50s %5d jobs  %6.1f s  netpack mean JCT %.2f h", label, r.Jobs, r.Wall.Seconds(), r.Mean("netpack")/3600)
	return r, nil
}

// Evaluate runs every experiment and draws the plots.
func Evaluate(cfg Config) (*Report, error) {
	all := netpack.PolicyNames()
	if !slices.Contains(all, "netpack") {
		return nil, fmt.Errorf("policy netpack is not registered (have %v)", all)
	}
	rep := &Report{Cfg: cfg, Trace: map[string]*Run{}, NoINA: map[string]*Run{}, Separate: map[string]*Run{},
		SlotRuns: map[string]*Run{}}
	for _, p := range all {
		if p != "netpack" {
			rep.Baselines = append(rep.Baselines, p)
		}
	}
	warm := 0.0
	if cfg.Trace.Span() >= 3*86400 {
		warm = 86400
	}
	base := sim.Setup{Network: sim.DefaultNetwork(), INA: true, Mode: netpack.Joint, Interval: cfg.Interval, Warmup: warm}
	for _, l := range []Links{Roomy, Constrained} {
		c, err := cfg.cluster(cfg.Racks, cfg.Machines, l)
		if err != nil {
			return nil, err
		}
		s := base
		s.Cluster = c
		if rep.Trace[l.Name], err = cfg.compare("trace, "+l.Name, s, cfg.Trace, all); err != nil {
			return nil, err
		}
		s.INA = false
		if rep.NoINA[l.Name], err = cfg.compare("trace, INA off, "+l.Name, s, cfg.Trace, all); err != nil {
			return nil, err
		}
		s.INA, s.Mode = true, netpack.Separate
		if rep.Separate[l.Name], err = cfg.compare("trace, separate estimation, "+l.Name, s, cfg.Trace, []string{"netpack"}); err != nil {
			return nil, err
		}
	}
	if err := rep.slots(base); err != nil {
		return nil, err
	}
	if cfg.Memory.Seeds > 0 {
		if err := rep.memory(base, all); err != nil {
			return nil, err
		}
	}
	if err := rep.scale(base, all); err != nil {
		return nil, err
	}
	return rep, rep.plots()
}

// slots compares ESA with ATP on the constrained cluster, with the default and with a quarter
// of the aggregator memory (where slots, not links, are what jobs contend for).
func (rep *Report) slots(base sim.Setup) error {
	cfg := &rep.Cfg
	pols := []string{"netpack", "gpu-balance"}
	for _, mem := range []struct {
		suffix string
		frac   float64
	}{{"", 1}, {"-scarce", 0.25}} {
		for _, sp := range []sim.SlotPolicy{sim.ESA, sim.ATP} {
			c, err := cfg.cluster(cfg.Racks, cfg.Machines, Constrained)
			if err != nil {
				return err
			}
			for i := range c.Racks {
				c.Racks[i].INAMemoryBytes *= mem.frac
			}
			s := base
			s.Cluster = c
			s.Network.Slots.Policy = sp
			key := string(sp) + mem.suffix
			if rep.SlotRuns[key], err = cfg.compare(fmt.Sprintf("trace, slots %s, memory x%g", sp, mem.frac), s, cfg.Trace, pols); err != nil {
				return err
			}
			if key == "atp-scarce" {
				// Where INA capacity binds, joint and separate estimation can disagree.
				s.Mode = netpack.Separate
				if rep.Separate[ScarceATP], err = cfg.compare("trace, separate estimation, slots atp, memory x0.25", s, cfg.Trace, []string{"netpack"}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scale sweeps cluster sizes with synthetic workloads scaled to the cluster.
func (rep *Report) scale(base sim.Setup, all []string) error {
	cfg := &rep.Cfg
	for _, m := range cfg.Sizes {
		per := 20
		racks := max(1, m/per)
		c, err := cfg.cluster(racks, per, Constrained)
		if err != nil {
			return err
		}
		n := min(cfg.MaxJobs, int(cfg.JobsPerM*float64(racks*per)))
		// Beyond 1,000 machines jobs grow with the cluster, so that the number of concurrent
		// jobs (cost) stays bounded and the capped job count still fills the cluster.
		gs := max(1, racks*per/1000)
		tr, err := trace.Synthetic(trace.SynthConfig{Jobs: n, TotalGPUs: c.TotalGPUs(), Load: 0.8, MaxGPUs: c.TotalGPUs(),
			GPUScale: gs}, cfg.Seed)
		if err != nil {
			return err
		}
		s := base
		s.Cluster = c
		// Synthetic runs are short; the warm-up is the first tenth of the arrival window.
		s.Warmup = tr.Span() / 10
		r, err := cfg.compare(fmt.Sprintf("synthetic, %d machines (%d racks)", racks*per, racks), s, tr, all)
		if err != nil {
			return err
		}
		rep.Scale = append(rep.Scale, r)
	}
	return nil
}

// plots draws the figures the report links.
func (rep *Report) plots() error {
	dir := rep.Cfg.ImgDir
	for _, l := range []Links{Roomy, Constrained} {
		r := rep.Trace[l.Name]
		var series []plot.Series
		var names []string
		var means []float64
		for _, x := range r.Results {
			var jcts []float64
			for i := range x.Jobs {
				if x.Jobs[i].Submit >= x.Warmup {
					jcts = append(jcts, x.Jobs[i].JCT()/3600)
				}
			}
			series = append(series, plot.Series{Name: x.Policy, Values: jcts})
			names = append(names, x.Policy)
			means = append(means, x.Summary.MeanJCT/3600)
		}
		tag := "roomy"
		if l == Constrained {
			tag = "constrained"
		}
		cdf, err := plot.CDF("JCT CDF, "+filepath.Base(rep.Cfg.TraceName)+", "+l.Name, "JCT (hours, log scale)", series)
		if err != nil {
			return err
		}
		if err := plot.Save(cdf, filepath.Join(dir, "jct-cdf-"+tag)); err != nil {
			return err
		}
		bars, err := plot.Bars("Mean JCT, "+l.Name, "hours", names, means)
		if err != nil {
			return err
		}
		if err := plot.Save(bars, filepath.Join(dir, "jct-mean-"+tag)); err != nil {
			return err
		}
		rep.Images = append(rep.Images, "jct-cdf-"+tag, "jct-mean-"+tag)
	}
	if len(rep.Scale) == 0 {
		return nil
	}
	var xs []float64
	series := make([]plot.Series, len(rep.Baselines))
	for i, b := range rep.Baselines {
		series[i].Name = "vs " + b
	}
	for _, r := range rep.Scale {
		xs = append(xs, float64(len(r.Setup.Cluster.Machines)))
		for i, b := range rep.Baselines {
			series[i].Values = append(series[i].Values, 100*r.Gain(b))
		}
	}
	lines, err := plot.Lines("NetPack's mean-JCT reduction by cluster size", "machines (log scale)", "% lower mean JCT", xs, series, true)
	if err != nil {
		return err
	}
	rep.Images = append(rep.Images, "scale-gain")
	return plot.Save(lines, filepath.Join(dir, "scale-gain"))
}
