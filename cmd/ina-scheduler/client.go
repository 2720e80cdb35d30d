package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/scheduler"
)

func clientFlags(fs *flag.FlagSet) cli.ClientFlags {
	return cli.AddClientFlags(fs, "scheduler", DefaultAPIAddress, "INA_SCHEDULER_TOKEN")
}

func reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

func cmdSubmit(args []string) error {
	fs := flag.NewFlagSet("submit", flag.ExitOnError)
	cf := clientFlags(fs)
	file := fs.String("file", "", "job as JSON (the body of POST /v1/jobs); the flags below are ignored")
	name := fs.String("name", "", "job name")
	gpus := fs.Int("gpus", 1, "GPUs")
	model := fs.String("model", "resnet50", "model profile")
	iters := fs.Int("iterations", 100, "iterations")
	bytes := fs.Int("bytes", 0, "gradient bytes per iteration (default: the model's)")
	compute := fs.Duration("compute", -1, "compute time per iteration (default: the model's)")
	class := fs.Int("class", 0, "priority class 0..7")
	fs.Parse(args)
	var sub scheduler.Submission
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &sub); err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
	} else {
		if err := json.Unmarshal([]byte(strconv.Quote(*model)), &sub.Model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		sub.Name, sub.GPUs, sub.Iterations, sub.BytesPerIteration, sub.PriorityClass = *name, *gpus, *iters, *bytes, *class
		if *compute >= 0 {
			sec := compute.Seconds()
			sub.ComputeSec = &sec
		}
	}
	c, err := cli.NewClient(cf.Config(), scheduler.NewClient)
	if err != nil {
		return err
	}
	ctx, cancel := reqCtx()
	defer cancel()
	j, err := c.Submit(ctx, sub)
	if err != nil {
		return err
	}
	fmt.Printf("job %d queued\n", j.ID)
	return nil
}

func cmdJobs(args []string) error {
	fs := flag.NewFlagSet("jobs", flag.ExitOnError)
	cf := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	fs.Parse(args)
	c, err := cli.NewClient(cf.Config(), scheduler.NewClient)
	if err != nil {
		return err
	}
	ctx, cancel := reqCtx()
	defer cancel()
	jobs, err := c.Jobs(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(jobs)
	}
	printJobs(os.Stdout, jobs)
	return nil
}

// printJobs is the jobs table: one line per job, the failure reason below a failed one.
func printJobs(out io.Writer, jobs []scheduler.Job) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tname\tstate\tgpus\tps\tworkers\tina\tprio\titers\tmbps\tjct_s\t")
	for _, j := range jobs {
		ps, workers, ina, prio := "-", "-", "-", "-"
		if p := j.Placement; p != nil {
			ps, ina, prio = p.PS, strconv.FormatBool(p.INA), strconv.Itoa(p.PriorityCap)
			var ws []string
			for _, w := range p.Workers {
				ws = append(ws, fmt.Sprintf("%s:%d", w.Host, w.GPUs))
			}
			workers = strings.Join(ws, ",")
		}
		jct := "-"
		if j.State.Final() {
			jct = fmt.Sprintf("%.1f", j.JCTSec)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%.1f\t%s\t\n", j.ID, j.Name, j.State, j.GPUs, ps, workers, ina, prio,
			j.Progress.Iterations, j.Iterations, j.Progress.ThroughputMbps, jct)
		if j.Reason != "" {
			fmt.Fprintf(tw, "\t  %s\n", j.Reason)
		}
	}
	tw.Flush()
}

func cmdCancel(args []string) error {
	fs := flag.NewFlagSet("cancel", flag.ExitOnError)
	cf := clientFlags(fs)
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("cancel: want one job id")
	}
	id, err := strconv.Atoi(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("cancel: job id %q is not a number", fs.Arg(0))
	}
	c, err := cli.NewClient(cf.Config(), scheduler.NewClient)
	if err != nil {
		return err
	}
	ctx, cancel := reqCtx()
	defer cancel()
	if err := c.Cancel(ctx, id); err != nil {
		return err
	}
	fmt.Printf("job %d cancelled\n", id)
	return nil
}
