package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/inapack/inapack/netpack"
)

func init() {
	register("place", "place a batch of jobs on an empty cluster and print where they go", runPlace)
}

func runPlace(args []string) error {
	fs := flag.NewFlagSet("place", flag.ContinueOnError)
	clusterPath := fs.String("cluster", "", "cluster file (YAML or JSON); empty: -uniform")
	uniform := fs.String("uniform", "4x8x8", "uniform cluster RACKSxMACHINESxGPUS when -cluster is empty")
	jobsPath := fs.String("jobs", "", "job file (YAML or JSON), required")
	policy := fs.String("policy", "netpack", "placement policy: "+strings.Join(netpack.PolicyNames(), ", "))
	mode := fs.String("mode", "joint", "estimator for NetPack and the printed rates: joint or separate")
	noINA := fs.Bool("no-ina", false, "never enable INA")
	admission := fs.String("admission", netpack.AdmitFIFO, "admission rule: "+strings.Join(netpack.AdmissionNames(), " or "))
	priority := fs.String("priority", "size", "ESA priority rule: size (smaller total work wins) or none")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *jobsPath == "" {
		return errors.New("-jobs is required")
	}
	m, err := parseMode(*mode)
	if err != nil {
		return err
	}
	prio, err := parsePriority(*priority)
	if err != nil {
		return err
	}
	c, err := loadClusterFlag(*clusterPath, *uniform)
	if err != nil {
		return err
	}
	jobs, err := netpack.LoadJobs(*jobsPath)
	if err != nil {
		return err
	}
	var errs []error
	for _, j := range jobs {
		if err := j.Validate(c); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	pol, err := netpack.NewPolicy(*policy, netpack.Options{Mode: m, NoINA: *noINA, Admission: *admission, Priority: prio})
	if err != nil {
		return err
	}
	st := netpack.NewState(c)
	placed := pol.Schedule(st, jobs)
	for _, p := range placed {
		if err := st.Add(p); err != nil {
			return fmt.Errorf("policy %s produced an invalid placement: %w", pol.Name(), err)
		}
	}
	rates := netpack.Estimate(c, st.Running, m)
	started := map[string]bool{}
	for _, p := range placed {
		started[p.Job.ID] = true
	}
	if *asJSON {
		return printPlaceJSON(c, st.Running, rates, jobs, started)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# cluster %s: %d racks, %d machines, %d GPUs; policy %s; estimator %s\n", c.Name, len(c.Racks), len(c.Machines), c.TotalGPUs(), pol.Name(), m)
	fmt.Fprintln(tw, "job\tgpus\tmodel\tworkers (machine:gpus@rack)\tps\tina\tprio\titer/s\tflow Gb/s\tbottleneck")
	for i, p := range st.Running {
		var ws []string
		for _, w := range p.Workers {
			ws = append(ws, fmt.Sprintf("%d:%d@%s", w.Machine, w.GPUs, c.Racks[c.Machines[w.Machine].Rack].Name))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%v\t%d\t%.3f\t%.2f\t%s\n", p.Job.ID, p.Job.GPUs, p.Job.Model.Name, strings.Join(ws, " "),
			p.PS, p.INA, p.Priority, rates[i].IterPerSec, rates[i].FlowBps*8/1e9, rates[i].Bottleneck)
	}
	for _, j := range jobs {
		if !started[j.ID] {
			fmt.Fprintf(tw, "%s\t%d\t%s\twaiting (not admitted now)\t\t\t\t\t\t\n", j.ID, j.GPUs, j.Model.Name)
		}
	}
	return tw.Flush()
}

func parseMode(s string) (netpack.Mode, error) {
	switch s {
	case "joint":
		return netpack.Joint, nil
	case "separate":
		return netpack.Separate, nil
	}
	return 0, fmt.Errorf("-mode %q: want joint or separate", s)
}

type placeOut struct {
	Job       string             `json:"job"`
	GPUs      int                `json:"gpus"`
	Model     string             `json:"model"`
	Started   bool               `json:"started"`
	Placement *netpack.Placement `json:"placement,omitempty"`
	Rate      *netpack.JobRate   `json:"rate,omitempty"`
}

func printPlaceJSON(c *netpack.Cluster, running []netpack.Placement, rates []netpack.JobRate, jobs []*netpack.Job, started map[string]bool) error {
	byID := map[string]int{}
	for i, p := range running {
		byID[p.Job.ID] = i
	}
	var out []placeOut
	for _, j := range jobs {
		o := placeOut{Job: j.ID, GPUs: j.GPUs, Model: j.Model.Name, Started: started[j.ID]}
		if i, ok := byID[j.ID]; ok {
			o.Placement, o.Rate = &running[i], &rates[i]
		}
		out = append(out, o)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"cluster": c, "jobs": out})
}
