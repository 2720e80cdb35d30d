package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
	"github.com/inapack/inapack/sim/plot"
	"github.com/inapack/inapack/sim/trace"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func init() {
	register("sim", "simulate a job trace under one placement policy", runSim)
}

// simFlags are the flags sim and compare share: workload, cluster and model.
type simFlags struct {
	trace, format, paiTasks string
	skipBad                 bool
	synthetic, gpuScale     int
	load                    float64
	seed                    uint64
	cluster, uniform        string
	nicGbps, oversub        float64
	inaMemory               float64
	interval, warmup        float64
	arrivalScale            float64
	slots                   string
	skew, psTime            float64
	noINA, noPreempt        bool
	window                  float64
	noECN                   bool
	coreRTTus               float64
	switchPktSec, psPktSec  float64
	estimateErr             bool
	models                  string
	estimate                string
	admission, priority     string
	progress                bool
	jobsCSV, plots          string
}

func (f *simFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.trace, "trace", "", "job trace file (csv job_id,submit_time_s,num_gpus,duration_s; Philly cluster_job_log JSON; Alibaba pai_job_table)")
	fs.StringVar(&f.format, "format", "auto", "trace format: auto, csv, philly, pai")
	fs.StringVar(&f.paiTasks, "pai-tasks", "", "Alibaba pai_task_table.csv giving PAI jobs' GPU counts (without it every PAI job has 1 GPU)")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace rows (counted) instead of failing")
	fs.IntVar(&f.synthetic, "synthetic", 0, "instead of -trace, generate this many jobs calibrated to the ITP statistics")
	fs.IntVar(&f.gpuScale, "gpu-scale", 1, "multiply -synthetic job sizes by this (for large clusters)")
	fs.Float64Var(&f.load, "load", 0.8, "offered load (GPU-time / capacity) of -synthetic workloads")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of -synthetic workloads")
	fs.StringVar(&f.cluster, "cluster", "", "cluster file (YAML or JSON); default -uniform")
	fs.StringVar(&f.uniform, "uniform", "16x8x8", "uniform cluster RACKSxMACHINESxGPUS when -cluster is not given")
	fs.Float64Var(&f.nicGbps, "nic-gbps", 0, "with -uniform: host NIC capacity in Gbit/s (default 100)")
	fs.Float64Var(&f.oversub, "oversub", 0, "with -uniform: ToR oversubscription, rack NICs : uplink (default 2)")
	fs.Float64Var(&f.inaMemory, "ina-memory-bytes", 0, "INA memory of every ToR in bytes (0: the cluster's own; netpack's default 262144)")
	fs.Float64Var(&f.interval, "interval", 60, "scheduling interval in seconds")
	fs.Float64Var(&f.warmup, "warmup", -1, "seconds of warm-up left out of the summary; -1: the first seventh of the arrival window when it spans 3 days or more, else the first tenth")
	fs.Float64Var(&f.arrivalScale, "arrival-scale", 1, "multiply the trace's submission times by this (below 1 compresses arrivals: a higher offered load)")
	fs.StringVar(&f.slots, "slots", "esa", "switch slot policy: esa (free on completion) or atp (free when the PS answers)")
	fs.Float64Var(&f.skew, "skew", 0.5, "time between a chunk's first and last contribution, as a fraction of the rack RTT")
	fs.Float64Var(&f.psTime, "ps-time", 5e-6, "seconds the PS takes to answer a completed chunk (ATP hold time)")
	fs.BoolVar(&f.noPreempt, "no-preempt", false, "with -slots esa: no preemption (a chunk finding a slot held by a lower priority falls back instead of evicting it)")
	fs.BoolVar(&f.noINA, "no-ina", false, "disable in-network aggregation everywhere")
	fs.Float64Var(&f.window, "window", 0, "chunks a job keeps in flight (its agents' window and slot range; 0: 1024, the switch's slots)")
	fs.BoolVar(&f.noECN, "no-ecn", false, "switches never mark ECN (the switch's default threshold)")
	fs.Float64Var(&f.coreRTTus, "core-rtt-us", 0, "extra round trip of paths crossing the core, µs (0: 10)")
	fs.Float64Var(&f.switchPktSec, "switch-packet-sec", 0, "per-packet cost of a ToR pipeline in seconds (0: no limit)")
	fs.Float64Var(&f.psPktSec, "ps-packet-sec", 0, "per-packet cost at a PS host in seconds (0: no limit)")
	fs.StringVar(&f.models, "models", "", "assign models uniformly by job id from these profiles, e.g. "+strings.Join(netpack.ImageModels, ",")+" (default: by GPU-time buckets)")
	fs.BoolVar(&f.estimateErr, "estimator-error", false, "also run netpack's estimator on the running jobs and report its error against the simulator")
	fs.StringVar(&f.estimate, "estimate", "joint", "estimator NetPack scores with: joint or separate")
	fs.StringVar(&f.admission, "admission", netpack.AdmitFIFO, "admission rule, the same for every policy: "+strings.Join(netpack.AdmissionNames(), " or "))
	fs.StringVar(&f.priority, "priority", "size", "ESA priority rule, the same for every policy: size (smaller total work wins) or none")
	fs.BoolVar(&f.progress, "progress", false, "show a progress bar even when stderr is not a terminal")
	fs.StringVar(&f.jobsCSV, "jobs-csv", "", "write per-job results to this CSV file")
	fs.StringVar(&f.plots, "plots", "", "write JCT CDF and mean-JCT plots (PNG and SVG) into this directory")
}

// workload loads the trace and cluster and converts one for the other.
func (f *simFlags) workload() (*sim.Workload, *trace.Trace, error) {
	c, err := loadClusterFlag(f.cluster, f.uniform)
	if err != nil {
		return nil, nil, err
	}
	if err := sim.SetLinks(c, f.nicGbps, f.oversub); err != nil {
		return nil, nil, err
	}
	if err := setINAMemory(c, f.inaMemory); err != nil {
		return nil, nil, err
	}
	var tr *trace.Trace
	switch {
	case f.trace != "" && f.synthetic > 0:
		return nil, nil, errors.New("give -trace or -synthetic, not both")
	case f.trace != "":
		tr, err = trace.LoadFile(f.trace, trace.Format(f.format), f.paiTasks, trace.Options{SkipBad: f.skipBad})
	case f.synthetic > 0:
		tr, err = trace.Synthetic(trace.SynthConfig{Jobs: f.synthetic, TotalGPUs: c.TotalGPUs(), Load: f.load,
			MaxGPUs: c.TotalGPUs(), GPUScale: f.gpuScale}, f.seed)
	default:
		return nil, nil, errors.New("-trace FILE or -synthetic N is required")
	}
	if err != nil {
		return nil, nil, err
	}
	if tr.Skipped > 0 {
		fmt.Fprintf(os.Stderr, "netpack: skipped %d malformed trace rows\n", tr.Skipped)
	}
	if len(tr.Jobs) == 0 {
		return nil, nil, errors.New("the trace has no usable job")
	}
	mode := netpack.Joint
	switch f.estimate {
	case "joint":
	case "separate":
		mode = netpack.Separate
	default:
		return nil, nil, fmt.Errorf("-estimate %q: want joint or separate", f.estimate)
	}
	prio, err := parsePriority(f.priority)
	if err != nil {
		return nil, nil, err
	}
	if _, err := netpack.NewAdmission(f.admission, netpack.Options{}); err != nil {
		return nil, nil, err
	}
	if !(f.arrivalScale > 0) || math.IsInf(f.arrivalScale, 0) {
		return nil, nil, fmt.Errorf("-arrival-scale %v: want a positive factor", f.arrivalScale)
	}
	if f.arrivalScale != 1 {
		tr = tr.Scaled(f.arrivalScale)
	}
	warm := f.warmup
	if warm < 0 {
		warm = sim.DefaultWarmup(tr)
	}
	net := sim.Network{Slots: sim.SlotModel{Policy: sim.SlotPolicy(f.slots), SkewFrac: f.skew, PSSec: f.psTime, NoPreempt: f.noPreempt},
		Window: f.window, ECNOff: f.noECN, CoreRTTSec: f.coreRTTus * 1e-6,
		SwitchPacketSec: f.switchPktSec, PSPacketSec: f.psPktSec}
	var mix []string
	if f.models != "" {
		mix = strings.Split(f.models, ",")
	}
	setup := sim.Setup{Cluster: c, Network: net, Estimate: f.estimateErr, Mix: mix,
		INA: !f.noINA, Mode: mode, Interval: f.interval, Warmup: warm, Admission: f.admission, Priority: prio}
	w, err := sim.Prepare(setup, tr)
	if err != nil {
		return nil, nil, err
	}
	if len(w.TooBig) > 0 {
		fmt.Fprintf(os.Stderr, "netpack: left out %d jobs larger than the cluster's %d GPUs\n", len(w.TooBig), c.TotalGPUs())
	}
	return w, tr, nil
}

// parsePriority reads a -priority flag.
func parsePriority(s string) (netpack.PriorityRule, error) {
	switch s {
	case "size":
		return netpack.PriorityBySize, nil
	case "none":
		return netpack.PriorityNone, nil
	}
	return 0, fmt.Errorf("-priority %q: want size or none", s)
}

// setINAMemory gives every ToR bytes of INA memory (0 leaves the cluster as it is).
func setINAMemory(c *netpack.Cluster, bytes float64) error {
	if bytes == 0 {
		return nil
	}
	if !(bytes > 0) || math.IsInf(bytes, 0) {
		return fmt.Errorf("-ina-memory-bytes %v: want a positive number of bytes", bytes)
	}
	for i := range c.Racks {
		c.Racks[i].INAMemoryBytes = bytes
		if c.Racks[i].RTTSec <= 0 {
			c.Racks[i].RTTSec = 20e-6
		}
	}
	return c.Validate()
}

// progressFunc returns a progress callback drawing a bar on stderr, or nil when stderr is not a
// terminal and -progress is off.
func (f *simFlags) progressFunc(total int, what string) (func(done, total int), func()) {
	if !f.progress && !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil, func() {}
	}
	bar := progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(100_000_000), progressbar.OptionClearOnFinish())
	return func(done, _ int) { _ = bar.Set(done) }, func() { _ = bar.Finish() }
}

// outputs writes the per-job CSV and plots the flags ask for.
func (f *simFlags) outputs(results []*sim.Result) error {
	if f.jobsCSV != "" {
		fh, err := os.Create(f.jobsCSV)
		if err != nil {
			return err
		}
		if err := sim.WriteJobsCSV(fh, results...); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	if f.plots != "" {
		return writePlots(f.plots, results)
	}
	return nil
}

// writePlots draws the JCT CDF per policy and the mean JCT bars.
func writePlots(dir string, results []*sim.Result) error {
	var series []plot.Series
	var names []string
	var means []float64
	for _, r := range results {
		var jcts []float64
		for i := range r.Jobs {
			if r.Jobs[i].Submit >= r.Warmup {
				jcts = append(jcts, r.Jobs[i].JCT()/3600)
			}
		}
		series = append(series, plot.Series{Name: r.Policy, Values: jcts})
		names = append(names, r.Policy)
		means = append(means, r.Summary.MeanJCT/3600)
	}
	cdf, err := plot.CDF("JCT distribution", "JCT (hours, log scale)", series)
	if err != nil {
		return err
	}
	if err := plot.Save(cdf, filepath.Join(dir, "jct-cdf")); err != nil {
		return err
	}
	bars, err := plot.Bars("Mean JCT", "hours", names, means)
	if err != nil {
		return err
	}
	return plot.Save(bars, filepath.Join(dir, "jct-mean"))
}

func runSim(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	var f simFlags
	f.register(fs)
	policy := fs.String("policy", "netpack", fmt.Sprintf("placement policy %v", netpack.PolicyNames()))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w, _, err := f.workload()
	if err != nil {
		return err
	}
	prog, done := f.progressFunc(len(w.Jobs), *policy)
	res, err := w.Run(*policy, prog)
	done()
	if err != nil {
		return err
	}
	if err := sim.WriteSummary(os.Stdout, *policy, res); err != nil {
		return err
	}
	return f.outputs([]*sim.Result{res})
}
