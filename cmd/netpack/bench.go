package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inapack/inapack/netpack"
)

func init() {
	register("bench", "measure placement latency (machines, jobs, ms/job, total)", runBench)
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	policy := fs.String("policy", "netpack", "placement policy: "+strings.Join(netpack.PolicyNames(), ", "))
	sizes := fs.String("machines", "100,1000,10000", "cluster sizes (machines, racks of 20 x 8 GPUs)")
	jobs := fs.Int("jobs", 1000, "jobs placed one at a time per size")
	batch := fs.Int("batch", 4000, "jobs placed in one Schedule call on the largest cluster, as busy as -busy (0: skip)")
	busy := fs.Float64("busy", 0.7, "fraction of GPUs busy (placed by the same policy, untimed) before timing starts")
	gpus := fs.Int("gpus", 0, "GPUs of every timed job (0: ITP mix, 83% single-GPU)")
	seed := fs.Uint64("seed", 1, "workload seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *jobs <= 0 || *batch < 0 || *busy < 0 || *busy >= 1 || *gpus < 0 {
		return fmt.Errorf("-jobs must be > 0, -batch >= 0, -gpus >= 0, -busy in [0, 1)")
	}
	var ms []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || n > 1<<20 {
			return fmt.Errorf("-machines: %q is not a size in 1..1048576", s)
		}
		ms = append(ms, n)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "policy\tmachines\tgpus/job\tjobs\tplaced\tbusy\tmode\tms/job\ttotal\tcpu ms/job\tcpu total\t\n")
	row := func(cfg netpack.BenchConfig) error {
		r, err := netpack.RunBench(cfg)
		if err != nil {
			return err
		}
		mode := "one-by-one"
		if cfg.Batch {
			mode = "batch"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.0f%%\t%s\t%.3f\t%s\t%.3f\t%s\t\n", cfg.Policy, cfg.Machines, gpuLabel(cfg.GPUs), cfg.Jobs, r.Placed, 100*cfg.Busy, mode,
			float64(r.PerJob().Nanoseconds())/1e6, r.Elapsed.Round(time.Millisecond), float64(r.CPUPerJob().Nanoseconds())/1e6, r.CPU.Round(time.Millisecond))
		return nil
	}
	for _, m := range ms {
		if err := row(netpack.BenchConfig{Policy: *policy, Machines: m, Jobs: *jobs, Busy: *busy, GPUs: *gpus, Seed: *seed}); err != nil {
			return err
		}
	}
	if *batch > 0 {
		largest := ms[len(ms)-1]
		if err := row(netpack.BenchConfig{Policy: *policy, Machines: largest, Jobs: *batch, Batch: true, Busy: *busy, GPUs: *gpus, Seed: *seed}); err != nil {
			return err
		}
	}
	return tw.Flush()
}

func gpuLabel(g int) string {
	if g == 0 {
		return "ITP mix"
	}
	return strconv.Itoa(g)
}
