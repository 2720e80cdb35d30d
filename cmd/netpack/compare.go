package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	tracePath := fs.String("trace", "", "job trace in the CSV format of ../shared/traces (job_id,submit_time_s,num_gpus,duration_s), or Philly/PAI")
	out := fs.String("out", "docs/evaluation.md", "Markdown report to write")
	img := fs.String("img", "docs/img", "directory for the plots (PNG and SVG)")
	imgLink := fs.String("img-link", "img", "how the report links the plot directory")
	d := eval.DefaultConfig(nil, "")
	interval := fs.Float64("interval", d.Interval, "scheduling interval in seconds")
	loads := fs.String("loads", floats(d.Loads), "offered loads of the load sweep (the paper setting's "+fmt.Sprint(d.Paper.Load)+" must be among them)")
	sizes := fs.String("sizes", ints(d.Sizes), "machine counts of the cluster-size sweep")
	sizeJobs := fs.Int("size-jobs", d.SizeJobs, "synthetic jobs per cluster size")
	synthJobs := fs.Int("synthetic-jobs", d.SynthJobs, "jobs of the synthetic workload in the paper setting")
	seeds := fs.String("seeds", uints(d.Seeds), "seeds every experiment is repeated over (model draws and arrival jitter of the trace, synthetic workloads); 95% intervals need two or more")
	jitter := fs.Float64("jitter", d.JitterSec, "seconds each trace arrival moves by, uniformly in ±jitter, per seed")
	verdictHalf := fs.Float64("verdict-half-width", d.VerdictHalfWidth, "a comparison point whose 95% interval of netpack against its best baseline reaches -1% on both sides, or is wider than ± this and reaches 0 on both sides, gets more seeds for those two policies (0: never)")
	verdictSeeds := fs.Int("verdict-seeds", d.VerdictSeeds, "the most seeds such a point gets")
	packetsPath := fs.String("packets", "docs/packets-summary.json", "the policies on an emulated cluster (ina-cluster demo --summary) to show in section 11; a missing file is left out")
	updatePackets := fs.Bool("update-packets", false, "only rewrite section 11.1 of -out from -packets (after ina-cluster demo --summary), keeping every simulated figure")
	pols := fs.String("policies", "", "with -only: run only these policies besides netpack (comma-separated)")
	only := fs.String("only", "", "run only these experiments (comma-separated keys as in the log, e.g. main,no-ina) and print their comparison; no report")
	verbose := fs.Bool("v", false, "log every run's wall time to stderr (experiments are always logged)")
	validations := fs.String("validation", "docs/validation-summary.json,docs/validation-bmv2-summary.json",
		"validation summaries (make validate) to show against packets; missing files are left out")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *updatePackets {
		return rewritePackets(*out, *packetsPath)
	}
	if *tracePath == "" {
		return fmt.Errorf("-trace is required")
	}
	tr, err := trace.LoadFile(*tracePath, trace.FormatAuto, "", trace.Options{})
	if err != nil {
		return err
	}
	cfg := eval.DefaultConfig(tr, *tracePath)
	cfg.Interval, cfg.SizeJobs, cfg.SynthJobs, cfg.JitterSec = *interval, *sizeJobs, *synthJobs, *jitter
	if *verdictHalf < 0 || *verdictSeeds < 0 {
		return fmt.Errorf("-verdict-half-width and -verdict-seeds must not be negative")
	}
	cfg.VerdictHalfWidth, cfg.VerdictSeeds = *verdictHalf, *verdictSeeds
	sd, err := parseFloats("-seeds", *seeds)
	if err != nil {
		return err
	}
	cfg.Seeds = nil
	for _, x := range sd {
		if x < 0 || x != math.Trunc(x) {
			return fmt.Errorf("-seeds: %v is not a seed", x)
		}
		cfg.Seeds = append(cfg.Seeds, uint64(x))
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *pols != "" {
		cfg.Policies = strings.Split(*pols, ",")
	}
	cfg.ImgDir, cfg.ImgLink, cfg.Log, cfg.Verbose = *img, *imgLink, os.Stderr, *verbose
	if cfg.Loads, err = parseFloats("-loads", *loads); err != nil {
		return err
	}
	sz, err := parseFloats("-sizes", *sizes)
	if err != nil {
		return err
	}
	cfg.Sizes = nil
	for _, x := range sz {
		cfg.Sizes = append(cfg.Sizes, int(x))
	}
	if !slices.Contains(cfg.Loads, cfg.Paper.Load) || len(cfg.Sizes) == 0 || *sizeJobs <= 0 || *synthJobs <= 0 || !(*interval > 0) {
		return fmt.Errorf("-loads must include %g; -sizes, -size-jobs, -synthetic-jobs and -interval must be positive", cfg.Paper.Load)
	}
	for _, f := range strings.Split(*validations, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := eval.LoadValidation(f)
		if err != nil {
			return err
		}
		if v != nil {
			if v.Link, err = filepath.Rel(filepath.Dir(*out), filepath.Dir(f)); err != nil {
				return err
			}
			v.Link = filepath.ToSlash(v.Link)
			if v.Link == "." {
				v.Link = ""
			}
			cfg.Validations = append(cfg.Validations, v)
		}
	}
	if cfg.Packets, err = eval.LoadPackets(*packetsPath); err != nil {
		return err
	}
	rep, err := eval.Evaluate(cfg)
	if err != nil {
		return err
	}
	if len(cfg.Only) > 0 {
		return rep.Points(os.Stdout)
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

func floats(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func uints(xs []uint64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatUint(x, 10))
	}
	return strings.Join(s, ",")
}

func ints(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

// parseFloats reads a comma-separated list of positive numbers.
func parseFloats(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: %q is not a positive number", flag, f)
		}
		out = append(out, x)
	}
	return out, nil
}

// rewritePackets re-renders section 11.1 of the report at out from the packets summary.
func rewritePackets(out, packetsPath string) error {
	pk, err := eval.LoadPackets(packetsPath)
	if err != nil {
		return err
	}
	if pk == nil {
		return fmt.Errorf("%s: no packets summary (ina-cluster demo --policies all --repeat 3 --summary FILE writes it)", packetsPath)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	s, err := eval.UpdatePackets(string(md), pk)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	return os.WriteFile(out, []byte(s), 0o644)
}
