// Package eval runs the project's evaluation (NetPack against each baseline under one admission
// rule, in the paper's setting and sweeps around it, with the estimator's error against the
// simulator) and renders it as Markdown with plots.
package eval

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
	"github.com/inapack/inapack/sim/trace"
)

// Setting is one cluster, network and scheduling configuration.
type Setting struct {
	Racks, Machines, GPUs int
	NICGbps               float64 // host NICs, Gbit/s
	Oversub               float64 // rack NICs : ToR uplink
	MemoryBytes           float64 // INA memory per ToR
	RTTSec                float64 // ToR-PS round trip
	Slots                 sim.SlotModel
	NoINA                 bool
	Load                  float64 // offered load the trace is scaled to (0: its own arrivals)
	GradScale             float64 // models' gradient bytes multiplied by this (0: as profiled)
	Admission             string
	Priority              netpack.PriorityRule
	Mode                  netpack.Mode
}

// Cluster builds the physical cluster of s.
func (s Setting) Cluster() (*netpack.Cluster, error) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: s.Racks, MachinesPerRack: s.Machines, GPUsPerMachine: s.GPUs,
		NICGbps: s.NICGbps, Oversubscription: s.Oversub, INAMemoryBytes: math.Max(s.MemoryBytes, 1), RTTSec: s.RTTSec})
	if err != nil {
		return nil, err
	}
	for i := range c.Racks {
		c.Racks[i].INAMemoryBytes = s.MemoryBytes
	}
	return c, nil
}

// Describe is the setting in words for tables and titles.
func (s Setting) Describe() string {
	return fmt.Sprintf("%d racks x %d machines x %d GPUs, %gG NICs, %g:1 ToR, %.0f KiB/ToR", s.Racks, s.Machines, s.GPUs,
		s.NICGbps, s.Oversub, s.MemoryBytes/1024)
}

// Paper is the evaluation's default setting, after the NetPack paper (each choice is cited in
// the report's Setup section): 16 racks as in its simulator; 2 GPUs per machine as in its testbed
// (1,024 GPUs in all); 25G NICs under 4:1 oversubscribed ToR uplinks; 64 KiB of aggregator memory
// per ToR (256 slots of 256 B); 20 µs ToR-PS RTT; ESA slots; the trace's arrivals compressed to
// an offered load of 0.9 so that jobs queue.
var Paper = Setting{Racks: 16, Machines: 32, GPUs: 2, NICGbps: 25, Oversub: 4, MemoryBytes: 64 << 10, RTTSec: 20e-6,
	Slots: sim.DefaultSlotModel(), Load: 0.9}

// Legacy is the evaluation's earlier setting, kept as a second, labelled one: 16 racks x 8
// machines x 8 GPUs, 100G NICs, 2:1 ToRs, 256 KiB per ToR, the trace's own arrivals.
var Legacy = Setting{Racks: 16, Machines: 8, GPUs: 8, NICGbps: 100, Oversub: 2, MemoryBytes: 256 << 10, RTTSec: 20e-6,
	Slots: sim.DefaultSlotModel()}

// Config selects the workload and the experiments.
type Config struct {
	Trace     *trace.Trace
	TraceName string // shown in the report (e.g. the file name)
	Paper     Setting
	Legacy    Setting
	Interval  float64 // scheduling interval, seconds
	Loads     []float64
	Memories  []float64 // INA bytes per ToR
	GPUs      []int     // GPUs per machine, at the same GPU count as Paper
	Oversubs  []float64
	Sizes     []int // machines of the cluster-size sweep (synthetic workloads)
	SizeRack  int   // machines per rack in the size sweep
	SizeJobs  int   // synthetic jobs per size
	SynthJobs int   // synthetic workload in the paper's setting
	// Seeds are the independent draws every experiment is repeated over: each draws the trace's
	// model assignment and arrival jitter, or the synthetic workload, afresh. Figures are means
	// over them with 95% t-intervals; comparisons of policies are paired by seed.
	Seeds []uint64
	// JitterSec moves each trace arrival by a uniform draw in ±JitterSec (before the arrivals are
	// scaled to the offered load), per seed.
	JitterSec float64
	ImgDir    string    // where plots are written
	ImgLink   string    // how the Markdown refers to ImgDir
	Log       io.Writer // one line per finished experiment (wall time; never in the report)
	Verbose   bool      // and one per run
	Workers   int       // runs in parallel (0: GOMAXPROCS)
	// Only, if set, runs just the experiments with these keys (for iterating on a few; the report
	// needs them all).
	Only []string
	// Policies, if set, runs just these policies (netpack is always run).
	Policies []string
	// Grid is the factorial map of where placement matters (section 12), on synthetic workloads.
	Grid Grid
	// Validations are the summaries of `make validate` (LoadValidation) shown in section 11.
	Validations []*Validation
	// Packets is the policies' comparison on an emulated cluster (LoadPackets), shown in section 11.
	Packets *Packets
	// VerdictHalfWidth and VerdictSeeds: a comparison point whose interval of NetPack against its
	// best baseline reaches -1% on both sides, or is wider than ±VerdictHalfWidth and excludes 0
	// on neither side, is rerun for those two policies under more seeds, up to VerdictSeeds in
	// all (verdict.go; 0: never).
	VerdictHalfWidth float64
	VerdictSeeds     int
}

// DefaultConfig is what `make evaluation` runs on a trace.
func DefaultConfig(tr *trace.Trace, name string) Config {
	return Config{Trace: tr, TraceName: name, Paper: Paper, Legacy: Legacy, Interval: 60,
		Loads: []float64{0.5, 0.7, 0.9, 1.1}, Memories: []float64{16 << 10, 64 << 10, 256 << 10}, GPUs: []int{2, 4, 8},
		Oversubs: []float64{1, 4, 8}, Sizes: []int{100, 300, 1000, 3000, 10000}, SizeRack: 25, SizeJobs: 1000,
		SynthJobs: 2500, Seeds: []uint64{1, 2, 3, 4, 5}, JitterSec: 300, Grid: DefaultGrid, VerdictHalfWidth: 0.025, VerdictSeeds: 400}
}

// Grid is a two-level factorial over five settings around Base: INA memory per ToR, gradient
// scale (gradient against the compute it overlaps), ToR oversubscription, GPUs per machine (at
// Base's GPUs in all) and offered load. It runs the half fraction 2^(5-1) with defining relation
// I = ABCDE (the 16 cells with an even number of high levels): every main effect and every
// two-setting interaction stays estimable, at half the cost of the full grid. Every cell runs
// Jobs synthetic jobs per seed under every policy, and NetPack with separate estimation.
type Grid struct {
	Base      Setting
	Jobs      int
	Memories  [2]float64
	GradScale [2]float64
	Oversubs  [2]float64
	GPUs      [2]int
	Loads     [2]float64
}

// DefaultGrid is a cluster of 128 GPUs (8 racks of 16): racks small against the workload's
// largest jobs (32 and 64 GPUs), so that placement across racks and INA matter, and runs cheap
// enough for 16 cells x every policy x the seeds.
var DefaultGrid = Grid{Base: Setting{Racks: 8, Machines: 8, GPUs: 2, NICGbps: 25, Oversub: 4, MemoryBytes: 64 << 10, RTTSec: 20e-6,
	Slots: sim.DefaultSlotModel(), Load: 0.9}, Jobs: 600,
	Memories: [2]float64{16 << 10, 256 << 10}, GradScale: [2]float64{0.5, 2}, Oversubs: [2]float64{2, 8}, GPUs: [2]int{2, 8}, Loads: [2]float64{0.7, 1.1}}

// cells lists the grid's settings; cell i takes level (i >> k) & 1 of axis k, for the i with an
// even number of high levels.
func (g Grid) cells() []Setting {
	if g.Jobs <= 0 {
		return nil
	}
	var out []Setting
	for i := range 32 {
		if bits.OnesCount(uint(i))%2 != 0 {
			continue
		}
		s := g.Base
		lv := func(k int) int { return (i >> k) & 1 }
		s.MemoryBytes = g.Memories[lv(0)]
		s.GradScale = g.GradScale[lv(1)]
		s.Oversub = g.Oversubs[lv(2)]
		s.GPUs = g.GPUs[lv(3)]
		s.Machines = g.Base.Machines * g.Base.GPUs / s.GPUs
		s.Load = g.Loads[lv(4)]
		out = append(out, s)
	}
	return out
}

// Run is one workload under several policies, repeated over the configuration's seeds.
type Run struct {
	Key     string
	Label   string
	Setting Setting
	Source  string // "trace" or "synthetic"
	Jobs    int
	TooBig  int             // trace jobs larger than the cluster, left out
	Offered float64         // the trace's own offered load on this cluster
	Scale   float64         // submission times multiplied by this
	Results []*sim.Result   // the first seed's, for the per-job figures (CDFs, "why")
	Seeds   [][]*sim.Result // [seed][policy]; Seeds[0] is Results
	Wall    time.Duration
	// Verdict holds the mean JCTs of netpack and the best baseline under every seed of the
	// verdict, Seeds' first, when refine added seeds (nil otherwise).
	Verdict map[string][]float64
}

// Result returns a policy's result under the first seed (nil if absent).
func (r *Run) Result(policy string) *sim.Result { return r.seedResult(0, policy) }

func (r *Run) seedResult(s int, policy string) *sim.Result {
	for _, x := range r.Seeds[s] {
		if x != nil && x.Policy == policy {
			return x
		}
	}
	return nil
}

// perSeed is f of a policy's result under every seed (nil if the policy did not run).
func (r *Run) perSeed(policy string, f func(*sim.Result) float64) []float64 {
	var xs []float64
	for s := range r.Seeds {
		x := r.seedResult(s, policy)
		if x == nil {
			return nil
		}
		xs = append(xs, f(x))
	}
	return xs
}

func meanJCT(x *sim.Result) float64 { return x.Summary.MeanJCT }

// MeanCI is a policy's mean JCT over the seeds with its interval (NaN if absent).
func (r *Run) MeanCI(policy string) ci { return tInterval(r.perSeed(policy, meanJCT)) }

// Mean returns a policy's mean JCT averaged over the seeds (NaN if absent).
func (r *Run) Mean(policy string) float64 { return r.MeanCI(policy).mean }

// avg is f of a policy's results averaged over the seeds.
func (r *Run) avg(policy string, f func(*sim.Result) float64) float64 {
	return tInterval(r.perSeed(policy, f)).mean
}

// ratioCI is the mean JCT of policy pa in run a over that of pb in run b, paired by seed (both
// runs draw the same workload per seed): the mean of the per-seed ratios with its interval.
func ratioCI(a *Run, pa string, b *Run, pb string) ci {
	return pairedRatio(a.perSeed(pa, meanJCT), b.perSeed(pb, meanJCT))
}

// pairedRatio is the mean of xa[i]/xb[i] with its interval (none when the lengths differ).
func pairedRatio(xa, xb []float64) ci {
	if xa == nil || xb == nil || len(xa) != len(xb) {
		return tInterval(nil)
	}
	q := make([]float64, len(xa))
	for i := range xa {
		q[i] = xa[i] / xb[i]
	}
	return tInterval(q)
}

// reduction turns a ratio's interval into that of the reduction 1 - ratio (the same width).
func reduction(c ci) ci {
	c.mean = 1 - c.mean
	return c
}

// gainCI is the reduction 1 - ratio of ratioCI, with the same interval.
func gainCI(a *Run, pa string, b *Run, pb string) ci { return reduction(ratioCI(a, pa, b, pb)) }

// GainOfCI is policy a's reduction of mean JCT against b in this run, 1 - a/b, paired by seed.
func (r *Run) GainOfCI(a, b string) ci { return gainCI(r, a, r, b) }

// GainCI is NetPack's reduction of mean JCT against a policy, paired by seed.
func (r *Run) GainCI(other string) ci { return r.GainOfCI("netpack", other) }

// Gain is GainCI's mean.
func (r *Run) Gain(other string) float64 { return r.GainCI(other).mean }

// BestBaseline is the baseline with the lowest mean JCT over the seeds (ties: first by name).
func (r *Run) BestBaseline() string {
	best, bm := "", math.Inf(1)
	for _, x := range r.Results {
		if x != nil && isBaseline(x.Policy) {
			if m := r.Mean(x.Policy); m < bm {
				best, bm = x.Policy, m
			}
		}
	}
	return best
}

// isNetPack: NetPack's own placements ("netpack" and its earlier versions).
func isNetPack(p string) bool { return p == "netpack" || strings.HasPrefix(p, "netpack-") }

// isBaseline: every registered policy but NetPack's own placements is a baseline.
func isBaseline(p string) bool { return slices.Contains(netpack.PolicyNames(), p) && !isNetPack(p) }

// Report is every run of the evaluation.
type Report struct {
	Cfg       Config
	Runs      map[string]*Run
	Order     []string // run keys in the order of the experiments
	NetPacks  []string // "netpack" first, then its earlier versions
	Baselines []string
	Images    []string
}

// Experiment keys.
const (
	kMain      = "main"
	kKnapsack  = "knapsack"
	kLegacy    = "legacy"
	kSynth     = "synthetic"
	kNoINA     = "no-ina"
	kSeparate  = "separate"
	kATP       = "atp"
	kNoPreempt = "no-preempt"
	kNoPrio    = "prio-none"
)

func kGrid(i int) string    { return fmt.Sprintf("grid-%d", i) }
func kGridSep(i int) string { return fmt.Sprintf("grid-%d-separate", i) }

func kLoad(l float64) string    { return fmt.Sprintf("load-%g", l) }
func kMem(m float64) string     { return fmt.Sprintf("mem-%g", m) }
func kGPUs(g int) string        { return fmt.Sprintf("gpus-%d", g) }
func kOver(o float64) string    { return fmt.Sprintf("oversub-%g", o) }
func kSize(m int) string        { return fmt.Sprintf("size-%d", m) }
func kSizeSep(m int) string     { return fmt.Sprintf("size-%d-separate", m) }
func kLoadSep(l float64) string { return fmt.Sprintf("load-%g-separate", l) }

// exp is one experiment before it runs.
type exp struct {
	key, label string
	s          Setting
	source     string // "trace", "synthetic" (paper cluster) or "size"
	machines   int    // size sweep
	policies   []string
	estimate   bool // measure the estimator beside the simulator in NetPack's runs
	renames    map[string]string
}

func (cfg *Config) experiments(all []string) []exp {
	p := cfg.Paper
	with := func(f func(*Setting)) Setting { s := p; f(&s); return s }
	var es []exp
	add := func(e exp) {
		if e.source == "" {
			e.source = "trace"
		}
		es = append(es, e)
	}
	add(exp{key: kMain, label: "paper setting", s: p, policies: all, estimate: true})
	add(exp{key: kKnapsack, label: "paper setting, knapsack admission", s: with(func(s *Setting) { s.Admission = netpack.AdmitKnapsack }), policies: all})
	add(exp{key: kLegacy, label: "8-GPU machines, 100G 2:1, 256 KiB, trace arrivals (earlier setting)", s: cfg.Legacy, policies: all})
	add(exp{key: kSynth, label: "paper setting, synthetic ITP-shaped workload", s: p, source: "synthetic", policies: all})
	add(exp{key: kNoINA, label: "paper setting, INA off", s: with(func(s *Setting) { s.NoINA = true }), policies: all})
	add(exp{key: kSeparate, label: "paper setting, NetPack with separate estimation", s: with(func(s *Setting) { s.Mode = netpack.Separate }), policies: []string{"netpack"}})
	add(exp{key: kATP, label: "paper setting, ATP slots", s: with(func(s *Setting) { s.Slots.Policy = sim.ATP }), policies: all})
	add(exp{key: kNoPreempt, label: "paper setting, ESA without preemption", s: with(func(s *Setting) { s.Slots.NoPreempt = true }), policies: all})
	add(exp{key: kNoPrio, label: "paper setting, every job priority 0", s: with(func(s *Setting) { s.Priority = netpack.PriorityNone }), policies: all})
	for _, l := range cfg.Loads {
		if l != p.Load {
			add(exp{key: kLoad(l), label: fmt.Sprintf("paper setting, offered load %g", l), s: with(func(s *Setting) { s.Load = l }), policies: all, estimate: true})
		}
		add(exp{key: kLoadSep(l), label: fmt.Sprintf("paper setting, offered load %g, separate estimation", l), s: with(func(s *Setting) { s.Load = l; s.Mode = netpack.Separate }), policies: []string{"netpack"}})
	}
	for _, m := range cfg.Memories {
		if m != p.MemoryBytes {
			add(exp{key: kMem(m), label: fmt.Sprintf("paper setting, %.0f KiB per ToR", m/1024), s: with(func(s *Setting) { s.MemoryBytes = m }), policies: all})
		}
	}
	for _, g := range cfg.GPUs {
		if g != p.GPUs {
			add(exp{key: kGPUs(g), label: fmt.Sprintf("paper setting, %d GPUs per machine", g),
				s: with(func(s *Setting) { s.Machines = p.Machines * p.GPUs / g; s.GPUs = g }), policies: all})
		}
	}
	for _, o := range cfg.Oversubs {
		if o != p.Oversub {
			add(exp{key: kOver(o), label: fmt.Sprintf("paper setting, %g:1 ToR uplinks", o), s: with(func(s *Setting) { s.Oversub = o }), policies: all})
		}
	}
	for _, m := range cfg.Sizes {
		racks := max(1, (m+cfg.SizeRack-1)/cfg.SizeRack)
		s := with(func(s *Setting) { s.Racks = racks; s.Machines = min(m, cfg.SizeRack) })
		add(exp{key: kSize(m), label: fmt.Sprintf("synthetic, %d machines", racks*s.Machines), s: s, source: "size", machines: m, policies: all})
		add(exp{key: kSizeSep(m), label: fmt.Sprintf("synthetic, %d machines, separate estimation", racks*s.Machines), s: with(func(x *Setting) { *x = s; x.Mode = netpack.Separate }),
			source: "size", machines: m, policies: []string{"netpack"}})
	}
	for i, s := range cfg.Grid.cells() {
		label := fmt.Sprintf("grid: %.0f KiB, gradient x%g, %g:1, %d GPUs/machine, load %g", s.MemoryBytes/1024, s.GradScale, s.Oversub, s.GPUs, s.Load)
		add(exp{key: kGrid(i), label: label, s: s, source: "grid", policies: all})
		sep := s
		sep.Mode = netpack.Separate
		add(exp{key: kGridSep(i), label: label + ", separate estimation", s: sep, source: "grid", policies: []string{"netpack"}})
	}
	return es
}

func (cfg *Config) logf(format string, a ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, format+"\n", a...)
	}
}

// workload prepares the jobs of an experiment under one seed: the trace (jittered, its models
// drawn by the seed) or a synthetic one on its cluster, arrivals scaled to its offered load.
func (cfg *Config) workload(e exp, seed uint64) (*sim.Workload, float64, float64, error) {
	c, err := e.s.Cluster()
	if err != nil {
		return nil, 0, 0, err
	}
	var tr *trace.Trace
	mixSeed := uint64(0)
	switch e.source {
	case "trace":
		tr, mixSeed = cfg.Trace, seed
	case "synthetic":
		tr, err = trace.Synthetic(trace.SynthConfig{Jobs: cfg.SynthJobs, TotalGPUs: c.TotalGPUs(), Load: e.s.Load, MaxGPUs: c.TotalGPUs()}, seed)
	case "size":
		// Beyond 1,000 machines every job's GPU count grows with the cluster, so that a bounded
		// number of jobs fills it (and a run stays within seconds).
		tr, err = trace.Synthetic(trace.SynthConfig{Jobs: cfg.SizeJobs, TotalGPUs: c.TotalGPUs(), Load: e.s.Load, MaxGPUs: c.TotalGPUs(),
			GPUScale: max(1, len(c.Machines)/1000)}, seed)
	case "grid":
		tr, err = trace.Synthetic(trace.SynthConfig{Jobs: cfg.Grid.Jobs, TotalGPUs: c.TotalGPUs(), Load: e.s.Load, MaxGPUs: c.TotalGPUs()}, seed)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	// The offered load and its scale come from the trace as recorded, so every seed compresses
	// the same week by the same factor.
	offered, scale := tr.OfferedLoad(c.TotalGPUs()), 1.0
	if e.source == "trace" {
		if e.s.Load > 0 && offered > 0 {
			scale = offered / e.s.Load
		}
		tr = tr.Jittered(cfg.JitterSec, seed).Scaled(scale)
	}
	setup := sim.Setup{Cluster: c, Network: sim.Network{Slots: e.s.Slots}, INA: !e.s.NoINA, Mode: e.s.Mode, Interval: cfg.Interval,
		Warmup: sim.DefaultWarmup(tr), Admission: e.s.Admission, Priority: e.s.Priority, Mix: netpack.ImageModels, MixSeed: mixSeed,
		GradScale: e.s.GradScale}
	w, err := sim.Prepare(setup, tr)
	return w, offered, scale, err
}

// Evaluate runs every experiment under every seed (runs in parallel, results in a fixed order)
// and draws the plots.
func Evaluate(cfg Config) (*Report, error) {
	all := netpack.PolicyNames()
	if !slices.Contains(all, "netpack") {
		return nil, fmt.Errorf("policy netpack is not registered (have %v)", all)
	}
	if len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("no seeds")
	}
	if len(cfg.Policies) > 0 {
		all = slices.DeleteFunc(all, func(p string) bool { return p != "netpack" && !slices.Contains(cfg.Policies, p) })
	}
	rep := &Report{Cfg: cfg, Runs: map[string]*Run{}}
	rep.NetPacks = []string{"netpack"}
	for _, p := range all {
		switch {
		case !isNetPack(p):
			rep.Baselines = append(rep.Baselines, p)
		case p != "netpack":
			rep.NetPacks = append(rep.NetPacks, p)
		}
	}
	es := cfg.experiments(all)
	if len(cfg.Only) > 0 {
		es = slices.DeleteFunc(es, func(e exp) bool { return !slices.Contains(cfg.Only, e.key) })
	}
	ns := len(cfg.Seeds)
	type task struct {
		e, s, p int
		cost    float64
	}
	runs := make([]*Run, len(es))
	ws := make([][]*sim.Workload, len(es))
	prep := make([][]sync.Once, len(es))
	perr := make([][]error, len(es))
	var tasks []task
	for i, e := range es {
		runs[i] = &Run{Key: e.key, Label: e.label, Setting: e.s, Source: e.source, Seeds: make([][]*sim.Result, ns)}
		ws[i], prep[i], perr[i] = make([]*sim.Workload, ns), make([]sync.Once, ns), make([]error, ns)
		for s := range ns {
			runs[i].Seeds[s] = make([]*sim.Result, len(e.policies))
			for k, p := range e.policies {
				// Expensive runs first, so the last ones finish together: spreading baselines
				// couple the most jobs; large clusters have the most of them.
				c := 1.0
				switch p {
				case "gpu-balance":
					c = 6
				case "tetris", "flow-balance":
					c = 3
				case "min-frag":
					c = 2
				}
				if e.source == "size" {
					c *= float64(e.machines) / 100
				}
				tasks = append(tasks, task{i, s, k, c})
			}
		}
		runs[i].Results = runs[i].Seeds[0]
	}
	sort.SliceStable(tasks, func(a, b int) bool { return tasks[a].cost > tasks[b].cost })
	var mu sync.Mutex
	var firstErr error
	left := make([]int, len(es))
	for i, e := range es {
		left[i] = ns * len(e.policies)
	}
	start := make([]time.Time, len(es))
	parallel(cfg.Workers, len(tasks), func(i int) {
		t := tasks[i]
		e := es[t.e]
		prep[t.e][t.s].Do(func() {
			mu.Lock()
			if start[t.e].IsZero() {
				start[t.e] = time.Now()
			}
			mu.Unlock()
			w, off, sc, err := cfg.workload(e, cfg.Seeds[t.s])
			ws[t.e][t.s], perr[t.e][t.s] = w, err
			if err == nil && t.s == 0 {
				runs[t.e].Offered, runs[t.e].Scale = off, sc
				runs[t.e].Jobs, runs[t.e].TooBig = len(w.Jobs), len(w.TooBig)
			}
		})
		if err := perr[t.e][t.s]; err != nil {
			mu.Lock()
			firstErr = cmpErr(firstErr, fmt.Errorf("%s, seed %d: %w", e.label, cfg.Seeds[t.s], err))
			mu.Unlock()
			return
		}
		p := e.policies[t.p]
		t0 := time.Now()
		// The estimator is measured under the first seed only: section 6 reports one run.
		res, err := ws[t.e][t.s].RunEstimating(p, e.estimate && p == "netpack" && t.s == 0, nil)
		if cfg.Verbose {
			cfg.logf("run:  %-62s seed %-3d %-14s %6.2f s", e.label, cfg.Seeds[t.s], p, time.Since(t0).Seconds())
		}
		mu.Lock()
		if err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("%s, seed %d, %s: %w", e.label, cfg.Seeds[t.s], p, err))
		} else {
			runs[t.e].Seeds[t.s][t.p] = res
		}
		if left[t.e]--; left[t.e] == 0 {
			runs[t.e].Wall = time.Since(start[t.e])
			cfg.logf("eval: %-62s %5d jobs x %d seeds %7.1f s", e.label, runs[t.e].Jobs, ns, runs[t.e].Wall.Seconds())
		}
		mu.Unlock()
	})
	if firstErr != nil {
		return nil, firstErr
	}
	for _, r := range runs {
		rep.Runs[r.Key] = r
		rep.Order = append(rep.Order, r.Key)
	}
	if err := rep.refine(es); err != nil {
		return nil, err
	}
	if len(cfg.Only) > 0 {
		return rep, nil // a partial evaluation has no report, so no plots
	}
	return rep, rep.plots()
}

// parallel calls f(0..n-1) on up to workers goroutines (0: GOMAXPROCS).
func parallel(workers, n int, f func(int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// cmpErr keeps the first error by message order, so a failing evaluation reports the same error
// whatever the scheduling of its runs.
func cmpErr(have, err error) error {
	if have == nil || err.Error() < have.Error() {
		return err
	}
	return have
}
