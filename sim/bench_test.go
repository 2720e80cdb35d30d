package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim/trace"
)

func benchWorkload(b *testing.B, tr *trace.Trace, racks, perRack int) *Workload {
	b.Helper()
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: racks, MachinesPerRack: perRack, GPUsPerMachine: 8})
	if err != nil {
		b.Fatal(err)
	}
	if err := SetLinks(c, 25, 4); err != nil {
		b.Fatal(err)
	}
	w, err := Prepare(Setup{Cluster: c, Network: DefaultNetwork(), INA: true, Interval: 60}, tr)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkScale shows how a run grows with jobs and machines (synthetic load 0.8), for NetPack
// (consolidating: small network components) and GPU-balance (spreading: the network model's
// components span the cluster). Reported: ns per job simulated.
func BenchmarkScale(b *testing.B) {
	for _, pol := range []string{"netpack", "gpu-balance"} {
		for _, machines := range []int{160, 640, 2560} {
			for _, jobs := range []int{500, 2000} {
				benchScale(b, pol, machines, jobs)
			}
		}
	}
}

func benchScale(b *testing.B, pol string, machines, jobs int) {
	b.Run(fmt.Sprintf("%s/machines=%d/jobs=%d", pol, machines, jobs), func(b *testing.B) {
		racks := machines / 20
		tr, err := trace.Synthetic(trace.SynthConfig{Jobs: jobs, TotalGPUs: machines * 8, Load: 0.8, MaxGPUs: machines * 8}, 1)
		if err != nil {
			b.Fatal(err)
		}
		w := benchWorkload(b, tr, racks, 20)
		b.ResetTimer()
		for range b.N {
			if _, err := w.Run(pol, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*jobs), "ns/job")
	})
}

// BenchmarkWeekAllPolicies runs every policy on the ITP week (../shared/traces beside the
// repository, when present; otherwise a synthetic trace of the same size) on 16 racks of 8 x 8 GPUs.
func BenchmarkWeekAllPolicies(b *testing.B) {
	path := filepath.Join("..", "..", "shared", "traces", "itp-cluster04-week.csv")
	var tr *trace.Trace
	var err error
	if _, serr := os.Stat(path); serr == nil {
		tr, err = trace.LoadFile(path, trace.FormatAuto, "", trace.Options{})
	} else {
		tr, err = trace.Synthetic(trace.SynthConfig{Jobs: 2509, JobsPerHour: 14.9}, 1)
	}
	if err != nil {
		b.Fatal(err)
	}
	w := benchWorkload(b, tr, 16, 8)
	b.ResetTimer()
	for range b.N {
		if _, err := w.RunAll(netpack.PolicyNames(), nil); err != nil {
			b.Fatal(err)
		}
	}
}
