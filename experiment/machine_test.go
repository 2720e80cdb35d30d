package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/scheduler"
)

func TestReadAgentCounters(t *testing.T) {
	dir := t.TempDir()
	logs := []string{
		"worker: job=5 rank=0 iter=0 allreduce_ms=12.0\nworker-summary: job=5 rank=0 status=ok resent=30 fast_resent=10 window_cuts=7 ignored_results=40 cpu_ms=250.0 runq_ms=1500.0\n",
		"worker-summary: job=5 rank=1 status=ok resent=5 fast_resent=5 window_cuts=2 ignored_results=1\n", // no schedstat
		"ps: job=5 resend=35\n",
	}
	var j scheduler.Job
	for i, l := range logs {
		p := filepath.Join(dir, []string{"r0.log", "r1.log", "ps.log"}[i])
		if err := os.WriteFile(p, []byte(l), 0o644); err != nil {
			t.Fatal(err)
		}
		role := "worker"
		if i == 2 {
			role = "ps"
		}
		j.Procs = append(j.Procs, scheduler.Proc{Role: role, Log: p})
	}
	got := readAgentCounters(j)
	want := agentCounters{Timeouts: 20, FastResent: 15, WindowCuts: 9, Ignored: 41, CPUSec: 0.25, RunQueueSec: 1.5}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMachineReportBands(t *testing.T) {
	res := &results{Mixes: []mix{
		{ID: 0, Jobs: []mixJob{{Workers: []string{"h1", "h2"}, Iterations: 10, Bytes: 512}}, Machine: &machineUse{CPUs: 2, Busy: 0.4, Stalled: 0.2}},
		{ID: 1, Jobs: []mixJob{{Workers: []string{"h1", "h2", "h3"}, Iterations: 10, Bytes: 512}}, Machine: &machineUse{CPUs: 2, Busy: 1, Stalled: 0.9}},
	}}
	for _, j := range []jobResult{
		{Mix: "m00", State: "completed", MeasuredMbps: 10, SimulatedMbps: 11, MeasuredJCT: 1, SimulatedJCT: 1},
		{Mix: "m00", State: "completed", MeasuredMbps: 5, SimulatedMbps: 5, MeasuredJCT: 2, SimulatedJCT: 2.2},
		{Mix: "m01", State: "completed", MeasuredMbps: 2, SimulatedMbps: 8, MeasuredJCT: 4, SimulatedJCT: 1, Agents: agentCounters{Timeouts: 7}},
		{Mix: "m01", State: "completed", MeasuredMbps: 1, SimulatedMbps: 2, MeasuredJCT: 8, SimulatedJCT: 4},
	} {
		res.Jobs = append(res.Jobs, j)
	}
	out := machineReport(res)
	for _, want := range []string{"| below 60% | 1 | 2 |", "| 75% and more | 1 | 2 |", "expired 7 times", "each mix is 3-4 processes"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "60-75%") {
		t.Errorf("a band without jobs is shown:\n%s", out)
	}
	for i := range res.Mixes {
		res.Mixes[i].Machine = nil
	}
	if out := machineReport(res); out != "" {
		t.Errorf("results without machine figures: %q, want nothing", out)
	}
}
