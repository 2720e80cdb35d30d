package experiment

import (
	"fmt"
	"slices"
	"strings"
)

// busyBands split the mixes by how busy the machine's CPUs were while they ran.
var busyBands = []struct {
	name   string
	lo, hi float64
}{{"below 60%", 0, 0.6}, {"60-75%", 0.6, 0.75}, {"75% and more", 0.75, 2}}

// machineReport says how busy the machine was during the mixes and how the simulator's agreement
// with the packets changes with it: the emulation is software on a few shared cores, and where
// its processes want more CPU than there is, the machine, not the network, sets the pace.
func machineReport(res *results) string {
	byMix := map[string]*machineUse{}
	procs := map[string]int{}
	for _, m := range res.Mixes {
		if m.Machine != nil {
			id := fmt.Sprintf("m%02d", m.ID)
			byMix[id] = m.Machine
			for _, j := range m.Jobs {
				procs[id] += len(j.Workers) + 1
			}
		}
	}
	if len(byMix) == 0 {
		return "" // results from before the machine was measured
	}
	var b strings.Builder
	var busy, stalled, load []float64
	var tail, kdrop uint64
	for _, u := range byMix {
		busy, stalled, load = append(busy, u.Busy), append(stalled, u.Stalled), append(load, u.Load1)
		tail += u.Switches.TailDrops
		kdrop += u.Switches.KernelDrops
	}
	var timeouts, fast, sent int
	for _, j := range res.Jobs {
		timeouts += j.Agents.Timeouts
		fast += j.Agents.FastResent
	}
	for _, m := range res.Mixes {
		for _, j := range m.Jobs {
			sent += j.Iterations * len(j.Workers) * ((j.Bytes + chunkBytes - 1) / chunkBytes)
		}
	}
	fmt.Fprintf(&b, "The machine while the mixes ran (%d CPUs; each mix is %d-%d processes: its agents, beside three switches "+
		"and the controller): CPUs busy %.0f%% (median over mixes; %.0f-%.0f%%), some task waiting for a CPU %.0f%% of the time "+
		"(median; the kernel's CPU pressure), 1-minute load %.1f-%.1f at the mixes' starts (other engineers' work included). "+
		"The switches tail-dropped %d frames and their sockets lost %d to full rings in all the mixes; the workers' timers "+
		"expired %d times and fast retransmission resent %d chunks, against %d chunks sent once (%.1f%%).\n\n",
		firstCPUs(byMix), minInt(procs), maxInt(procs), 100*median(busy), 100*slices.Min(busy), 100*slices.Max(busy),
		100*median(stalled), slices.Min(load), slices.Max(load), tail, kdrop, timeouts, fast, sent,
		100*float64(timeouts+fast)/float64(max(sent, 1)))
	b.WriteString("How the agreement depends on the machine: the simulator against the packets, jobs grouped by how busy the " +
		"CPUs were during their mix.\n\n| CPUs busy | mixes | jobs | throughput r | throughput MAPE | JCT r | JCT MAPE | " +
		"median simulated / measured throughput |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, band := range busyBands {
		var mt, pt, mj, pj, ratio []float64
		mixes := map[string]bool{}
		for _, j := range res.Jobs {
			u := byMix[j.Mix]
			if u == nil || u.Busy < band.lo || u.Busy >= band.hi || j.State != "completed" || j.SimulatedMbps <= 0 {
				continue
			}
			mixes[j.Mix] = true
			mt, pt = append(mt, j.MeasuredMbps), append(pt, j.SimulatedMbps)
			mj, pj = append(mj, j.MeasuredJCT), append(pj, j.SimulatedJCT)
			ratio = append(ratio, j.SimulatedMbps/j.MeasuredMbps)
		}
		if len(mt) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.3f | %.1f%% | %.3f | %.1f%% | %.2f |\n", band.name, len(mixes), len(mt),
			pearson(mt, pt), mape(mt, pt), pearson(mj, pj), mape(mj, pj), median(ratio))
	}
	b.WriteString("\n")
	b.WriteString(slotReport(res))
	return b.String()
}

// slotReport sets the switch settings side by side: where slots are few, chunks of different jobs
// meet in a slot, and the workers' retransmissions show what that costs them.
func slotReport(res *results) string {
	var b strings.Builder
	b.WriteString("By switch setting, INA jobs only: the simulator's median over-prediction, and the workers' recoveries.\n\n" +
		"| setting | INA jobs | median simulated / measured throughput | fast retransmissions | timeouts | window cuts |\n" +
		"|---|---:|---:|---:|---:|---:|\n")
	for _, g := range defaultGroups {
		var ratio []float64
		var a agentCounters
		for _, j := range res.Jobs {
			if j.Group != g.Name || !j.INA || j.State != "completed" || j.MeasuredMbps <= 0 || j.SimulatedMbps <= 0 {
				continue
			}
			ratio = append(ratio, j.SimulatedMbps/j.MeasuredMbps)
			a.FastResent += j.Agents.FastResent
			a.Timeouts += j.Agents.Timeouts
			a.WindowCuts += j.Agents.WindowCuts
		}
		if len(ratio) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f | %d | %d | %d |\n", g.Name, len(ratio), median(ratio), a.FastResent, a.Timeouts, a.WindowCuts)
	}
	return b.String() + "\n"
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func firstCPUs(m map[string]*machineUse) int {
	for _, u := range m {
		return u.CPUs
	}
	return 0
}

func minInt(m map[string]int) int {
	first, out := true, 0
	for _, v := range m {
		if first || v < out {
			out, first = v, false
		}
	}
	return out
}

func maxInt(m map[string]int) int {
	out := 0
	for _, v := range m {
		out = max(out, v)
	}
	return out
}

// cpus is the machine's CPU count as measured during the mixes (2 when not measured).
func cpus(res *results) int {
	for _, m := range res.Mixes {
		if m.Machine != nil && m.Machine.CPUs > 0 {
			return m.Machine.CPUs
		}
	}
	return 2
}
