package eval

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/inapack/inapack/sim"
)

// memSummary is what the side-by-side table quotes from the memory-bound experiment.
type memSummary struct {
	bestESA      float64 // largest seed-averaged ATP/ESA mean-JCT ratio over policies and memories
	bestESAWhere string
	bestJoint    float64 // largest seed-averaged reduction of joint over separate estimation
	worstJoint   float64 // smallest (most negative) one
	wall         time.Duration
	runs         int
}

// memoryMarkdown writes the memory-bound section.
func (rep *Report) memoryMarkdown(p func(string, ...any)) memSummary {
	cfg := &rep.Cfg
	mb := cfg.Memory
	sum := memSummary{bestESA: math.Inf(-1), bestJoint: math.Inf(-1), worstJoint: math.Inf(1)}
	for _, r := range rep.Mem {
		sum.wall += r.Wall
		sum.runs++
	}
	first := rep.Mem[memKey{mb.Memories[0], 1, memESA}]
	p("Where INA capacity binds. Synthetic ITP-shaped workloads (%d jobs, offered load %.1f) with every job's GPU count multiplied by %d, ",
		mb.Jobs, mb.Load, mb.GPUScale)
	p("on %d racks x %d machines x %d GPUs, so every job spans at least two machines and can aggregate; %s; ", mb.Racks, mb.Machines, mb.GPUs, Constrained.Name)
	var kib []string
	for _, m := range mb.Memories {
		kib = append(kib, fmt.Sprintf("%.0f KiB", m/1024))
	}
	p("%s of INA memory per ToR. Each cell averages mean JCT over seeds 1-%d (independent workloads; %d to %d jobs counted per run); ",
		strings.Join(kib, " and "), mb.Seeds, first.Results[0].Summary.Jobs, first.Jobs)
	p("the range is the smallest and largest per-seed ratio, because one scheduling decision shifts every later one and single runs are noisy. ")
	p("One run: `%s` (add `--slots atp`, `--no-preempt` or `--estimate separate`).\n\n", rep.memCmd(mb.Memories[0], 1, ""))

	p("**ESA against ATP.** ESA: short hold, priority sharing (NetPack's priorities; the baselines give every job priority 0, so for them ESA differs from ATP only in hold time). ATP: long hold, fair sharing.\n\n")
	p("| memory | policy | ESA mean JCT h | ATP mean JCT h | ATP / ESA | per-seed range |\n|---|---|---:|---:|---:|---|\n")
	for _, mem := range mb.Memories {
		for _, x := range first.Results {
			ratio, lo, hi := rep.memRatio(mem, memATP, memESA, x.Policy)
			if ratio > sum.bestESA {
				sum.bestESA, sum.bestESAWhere = ratio, fmt.Sprintf("%s, %.0f KiB", x.Policy, mem/1024)
			}
			p("| %.0f KiB | %s | %.2f | %.2f | %.2fx | %.2f-%.2fx |\n", mem/1024, x.Policy, rep.memMean(mem, memESA, x.Policy)/3600,
				rep.memMean(mem, memATP, x.Policy)/3600, ratio, lo, hi)
		}
	}

	p("\n**ESA's priority order alone** (NetPack; ESA's hold time in both, saturated switch memory shared by priority or fairly, `--no-preempt`):\n\n")
	p("| memory | priority: mean JCT h | fair: mean JCT h | fair / priority | per-seed range |\n|---|---:|---:|---:|---|\n")
	for _, mem := range mb.Memories {
		ratio, lo, hi := rep.memRatio(mem, memESAFair, memESA, "netpack")
		p("| %.0f KiB | %.2f | %.2f | %.2fx | %.2f-%.2fx |\n", mem/1024, rep.memMean(mem, memESA, "netpack")/3600,
			rep.memMean(mem, memESAFair, "netpack")/3600, ratio, lo, hi)
	}

	p("\n**Joint against separate estimation** (NetPack scoring with either; the simulated network is the same):\n\n")
	p("| memory | slots | joint: mean JCT h | separate: mean JCT h | joint's reduction | per-seed range of separate / joint |\n|---|---|---:|---:|---:|---|\n")
	for _, mem := range mb.Memories {
		for _, v := range [][2]string{{memESA, memESASep}, {memATP, memATPSep}} {
			j, s := rep.memMean(mem, v[0], "netpack"), rep.memMean(mem, v[1], "netpack")
			_, lo, hi := rep.memRatio(mem, v[1], v[0], "netpack")
			g := 1 - j/s
			sum.bestJoint, sum.worstJoint = math.Max(sum.bestJoint, g), math.Min(sum.worstJoint, g)
			p("| %.0f KiB | %s | %.2f | %.2f | %s | %.2f-%.2fx |\n", mem/1024, strings.ToUpper(v[0]), j/3600, s/3600, pct(g), lo, hi)
		}
	}
	sl, rtt := first.Setup.Network.Slots, first.Setup.Cluster.Racks[0].RTTSec
	esaHold := sim.SlotModel{Policy: sim.ESA, SkewFrac: sl.SkewFrac, PSSec: sl.PSSec}.HoldSec(rtt)
	atpHold := sim.SlotModel{Policy: sim.ATP, SkewFrac: sl.SkewFrac, PSSec: sl.PSSec}.HoldSec(rtt)
	p("\nReading these: where memory binds, INA capacity is memory / hold, so ATP's %.0f µs hold against ESA's %.0f µs ", atpHold*1e6, esaHold*1e6)
	p("(our choice of skew and PS time, section Setup) gives ATP %.1fx less aggregation per byte; at offered load %.1f slower service also ", atpHold/esaHold, mb.Load)
	p("compounds into queueing, which is why a mean-JCT ratio can exceed the capacity ratio. With more memory, fewer ToRs saturate and the ratio shrinks. ")
	p("A preempted job's traffic falls back to its PS and loads the links it shares with everyone, ")
	p("higher-priority jobs included, so strict priority moves INA capacity to some jobs without making the network faster ")
	p("(netpack's README works a two-job case); and NetPack scores placements with the fair-sharing estimator, so it does ")
	p("not foresee preemption. Where the ranges straddle 1.00x the difference is within the noise of single runs.\n\n")
	return sum
}
