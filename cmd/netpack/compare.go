package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
	"github.com/inapack/inapack/sim/eval"
	"github.com/inapack/inapack/sim/trace"
)

func init() {
	register("compare", "simulate a trace under every policy and compare mean JCT", runCompare)
}

// compareJSON is the -json output of compare.
type compareJSON struct {
	Cluster   string                 `json:"cluster"`
	Jobs      int                    `json:"jobs"`
	Counted   int                    `json:"counted_jobs"`
	Slots     string                 `json:"slots"`
	Sharing   string                 `json:"ina_sharing"` // fair, or priority (ESA preemption)
	INA       bool                   `json:"ina"`
	Estimate  string                 `json:"estimate"`
	Admission string                 `json:"admission"`
	Priority  string                 `json:"priority"`
	MeanJCT   map[string]float64     `json:"mean_jct_s"`
	Ratio     map[string]float64     `json:"ratio_to_ref"`
	Reference string                 `json:"reference"`
	Summary   map[string]sim.Summary `json:"summary"`
}

func runCompare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	var f simFlags
	f.register(fs)
	policies := fs.String("policies", "", "comma-separated policies (default all: "+strings.Join(netpack.PolicyNames(), ",")+")")
	ref := fs.String("ref", "netpack", "policy the ratios are relative to")
	asJSON := fs.Bool("json", false, "print a JSON object (per-policy mean JCT in seconds) instead of a table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	names := netpack.PolicyNames()
	if *policies != "" {
		names = strings.Split(*policies, ",")
	}
	w, _, err := f.workload()
	if err != nil {
		return err
	}
	prog, done := f.progressFunc(len(names)*len(w.Jobs), "all policies")
	results, err := w.RunAll(names, prog)
	done()
	if err != nil {
		return err
	}
	if *asJSON {
		out := compareJSON{Cluster: w.Setup.Cluster.Name, Jobs: len(w.Jobs), Slots: string(w.Setup.Network.Slots.Policy),
			Sharing: w.Setup.Network.Slots.Sharing().String(),
			INA:     w.Setup.INA, Estimate: w.Setup.Mode.String(), Admission: w.Setup.Admission, Priority: w.Setup.Priority.String(), Reference: *ref, MeanJCT: map[string]float64{},
			Ratio: map[string]float64{}, Summary: map[string]sim.Summary{}}
		var refMean float64
		for _, r := range results {
			if r.Policy == *ref {
				refMean = r.Summary.MeanJCT
			}
		}
		for _, r := range results {
			out.Counted = r.Summary.Jobs
			out.MeanJCT[r.Policy] = r.Summary.MeanJCT
			out.Summary[r.Policy] = r.Summary
			if refMean > 0 {
				out.Ratio[r.Policy] = r.Summary.MeanJCT / refMean
			}
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := sim.WriteSummary(os.Stdout, *ref, results...); err != nil {
		return err
	}
	return f.outputs(results)
}

func init() {
	register("evaluate", "run the whole evaluation on a trace and write docs/evaluation.md", runEvaluate)
}

func runEvaluate(args []string) error {
	fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "job trace (the ITP week: ../shared/traces/itp-cluster04-week.csv)")
	out := fs.String("out", "docs/evaluation.md", "Markdown report to write")
	img := fs.String("img", "docs/img", "directory for the plots (PNG and SVG)")
	imgLink := fs.String("img-link", "img", "how the report links the plot directory")
	racks := fs.Int("racks", 16, "racks of the trace cluster")
	machines := fs.Int("machines", 8, "machines per rack of the trace cluster")
	gpus := fs.Int("gpus", 8, "GPUs per machine")
	interval := fs.Float64("interval", 60, "scheduling interval in seconds")
	sizes := fs.String("sizes", "100,300,1000,3000,10000", "machine counts of the cluster-size sweep (empty: skip it)")
	perM := fs.Float64("jobs-per-machine", 4, "synthetic jobs per machine in the sweep")
	maxJobs := fs.Int("max-jobs", 8000, "cap on synthetic jobs per size")
	seed := fs.Uint64("seed", 1, "seed of the synthetic workloads")
	memSeeds := fs.Int("memory-seeds", eval.DefaultMemoryBound.Seeds, "seeds of the switch-memory-bound experiment (0: skip it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tracePath == "" {
		return fmt.Errorf("-trace is required")
	}
	tr, err := trace.LoadFile(*tracePath, trace.FormatAuto, "", trace.Options{})
	if err != nil {
		return err
	}
	var sz []int
	for _, s := range strings.Split(*sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a positive integer", s)
		}
		sz = append(sz, n)
	}
	if *memSeeds < 0 {
		return fmt.Errorf("-memory-seeds must be >= 0, got %d", *memSeeds)
	}
	mem := eval.DefaultMemoryBound
	mem.Seeds = *memSeeds
	rep, err := eval.Evaluate(eval.Config{Memory: mem, Trace: tr, TraceName: *tracePath, Racks: *racks, Machines: *machines, GPUs: *gpus,
		Interval: *interval, Sizes: sz, JobsPerM: *perM, MaxJobs: *maxJobs, Seed: *seed, ImgDir: *img, ImgLink: *imgLink,
		Log: os.Stderr})
	if err != nil {
		return err
	}
	fh, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := rep.Markdown(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
