package eval

import (
	"fmt"
	"math"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim"
	"github.com/inapack/inapack/sim/trace"
)

// MemoryBound is the experiment where switch memory, not links, is what jobs contend for:
// every job spans machines (synthetic ITP-shaped sizes multiplied by GPUScale on machines with
// few GPUs), links are constrained and ToRs have little INA memory. Seeds repeat it on
// independent workloads, because one schedule decision can shift every later one.
type MemoryBound struct {
	Racks, Machines, GPUs int
	Jobs                  int
	GPUScale              int
	Load                  float64
	Memories              []float64 // INA bytes per ToR
	Seeds                 int       // seeds 1..Seeds; 0 skips the experiment
}

// DefaultMemoryBound is the setting docs/evaluation.md reports: 16 racks of 16 4-GPU machines,
// 1,500 jobs of at least 8 GPUs (two machines), 25G NICs and 4:1 ToRs, 16 and 64 KiB per ToR.
var DefaultMemoryBound = MemoryBound{Racks: 16, Machines: 16, GPUs: 4, Jobs: 1500, GPUScale: 8, Load: 0.8,
	Memories: []float64{16384, 65536}, Seeds: 5}

// The variants run per memory size and seed.
const (
	memESA     = "esa"          // ESA slots, priority sharing; every policy
	memESAFair = "esa-fair"     // ESA hold time, fair sharing (no preemption); netpack
	memATP     = "atp"          // ATP slots; every policy
	memESASep  = "esa-separate" // ESA, NetPack scoring with the separate estimator
	memATPSep  = "atp-separate" // ATP, likewise
)

type memKey struct {
	mem     float64
	seed    int
	variant string
}

// memory runs the memory-bound experiment.
func (rep *Report) memory(base sim.Setup, all []string) error {
	cfg := &rep.Cfg
	mb := cfg.Memory
	rep.Mem = map[memKey]*Run{}
	for seed := 1; seed <= mb.Seeds; seed++ {
		c0, err := rep.memCluster(0)
		if err != nil {
			return err
		}
		tr, err := trace.Synthetic(trace.SynthConfig{Jobs: mb.Jobs, TotalGPUs: c0.TotalGPUs(), Load: mb.Load,
			MaxGPUs: c0.TotalGPUs(), GPUScale: mb.GPUScale}, uint64(seed))
		if err != nil {
			return err
		}
		for _, mem := range mb.Memories {
			for _, v := range []struct {
				name     string
				slots    sim.SlotPolicy
				fair     bool
				mode     netpack.Mode
				policies []string
			}{
				{memESA, sim.ESA, false, netpack.Joint, all},
				{memESAFair, sim.ESA, true, netpack.Joint, []string{"netpack"}},
				{memATP, sim.ATP, false, netpack.Joint, all},
				{memESASep, sim.ESA, false, netpack.Separate, []string{"netpack"}},
				{memATPSep, sim.ATP, false, netpack.Separate, []string{"netpack"}},
			} {
				c, err := rep.memCluster(mem)
				if err != nil {
					return err
				}
				s := base
				s.Cluster = c
				s.Network.Slots.Policy, s.Network.Slots.NoPreempt, s.Mode = v.slots, v.fair, v.mode
				s.Warmup = cliWarmup(tr)
				label := fmt.Sprintf("memory-bound, %.0f KiB, seed %d, %s", mem/1024, seed, v.name)
				r, err := cfg.compare(label, s, tr, v.policies)
				if err != nil {
					return err
				}
				rep.Mem[memKey{mem, seed, v.name}] = r
			}
		}
	}
	return nil
}

// cliWarmup is the warm-up netpack compare uses by default, so the printed command reproduces a run.
func cliWarmup(tr *trace.Trace) float64 {
	if tr.Span() >= 3*86400 {
		return 86400
	}
	return 0
}

func (rep *Report) memCluster(mem float64) (*netpack.Cluster, error) {
	mb := rep.Cfg.Memory
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: mb.Racks, MachinesPerRack: mb.Machines, GPUsPerMachine: mb.GPUs})
	if err != nil {
		return nil, err
	}
	if err := sim.SetLinks(c, Constrained.NICGbps, Constrained.Oversub); err != nil {
		return nil, err
	}
	if mem > 0 {
		for i := range c.Racks {
			c.Racks[i].INAMemoryBytes = mem
		}
	}
	return c, nil
}

// memMean is a policy's mean JCT under a variant, averaged over seeds.
func (rep *Report) memMean(mem float64, variant, policy string) float64 {
	s, n := 0.0, 0
	for seed := 1; seed <= rep.Cfg.Memory.Seeds; seed++ {
		if r := rep.Mem[memKey{mem, seed, variant}]; r != nil {
			s += r.Mean(policy)
			n++
		}
	}
	return s / float64(n)
}

// memRatio is mean(a)/mean(b) over seeds, and the smallest and largest per-seed ratio.
func (rep *Report) memRatio(mem float64, a, b, policy string) (ratio, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for seed := 1; seed <= rep.Cfg.Memory.Seeds; seed++ {
		ra, rb := rep.Mem[memKey{mem, seed, a}], rep.Mem[memKey{mem, seed, b}]
		x := ra.Mean(policy) / rb.Mean(policy)
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return rep.memMean(mem, a, policy) / rep.memMean(mem, b, policy), lo, hi
}

// memCmd is the command that reproduces one run of the experiment.
func (rep *Report) memCmd(mem float64, seed int, extra string) string {
	mb := rep.Cfg.Memory
	return fmt.Sprintf("netpack compare --synthetic %d --gpu-scale %d --load %g --seed %d --uniform %dx%dx%d --nic-gbps %g --oversub %g --ina-memory-bytes %.0f --interval %g%s",
		mb.Jobs, mb.GPUScale, mb.Load, seed, mb.Racks, mb.Machines, mb.GPUs, Constrained.NICGbps, Constrained.Oversub, mem,
		rep.Cfg.Interval, extra)
}
