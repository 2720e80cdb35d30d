package experiment

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/scheduler"
)

// machineUse is what the machine and the switches did while one mix ran: the emulation is
// software on a few shared cores, so a mix whose processes want more CPU than there is runs
// slower than its links allow, which no network model predicts.
type machineUse struct {
	Seconds float64 `json:"seconds"`
	CPUs    int     `json:"cpus"`
	// Load1 is the 1-minute load average when the mix started (other work on the machine too).
	Load1 float64 `json:"load1"`
	// Busy is the fraction of all CPUs' time spent not idle; Stalled the fraction of wall time in
	// which some runnable task waited for a CPU (the kernel's pressure stall information,
	// /proc/pressure/cpu "some"; 0 where the kernel has none).
	Busy    float64 `json:"busy"`
	Stalled float64 `json:"stalled"`
	// Switches: what the emulated switches did, summed over them (port counters, CPU, waits).
	Switches emu.SwitchCounters `json:"switches"`
}

// cpuSample is the machine-wide CPU counters at one time.
type cpuSample struct {
	at          time.Time
	busy, total float64 // /proc/stat jiffies
	stallSec    float64 // /proc/pressure/cpu some total
	cpus        int
	switches    map[string]emu.SwitchCounters
}

func sampleCPU(ctx context.Context, cl *emu.Cluster) cpuSample {
	s := cpuSample{at: time.Now()}
	if f, err := os.Open("/proc/stat"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 0 && strings.HasPrefix(fs[0], "cpu") && fs[0] != "cpu" {
				s.cpus++
			}
			if len(fs) > 0 && fs[0] == "cpu" {
				for i, v := range fs[1:] {
					x, _ := strconv.ParseFloat(v, 64)
					if i >= 8 { // guest time is already in user
						break
					}
					s.total += x
					if i != 3 && i != 4 { // idle, iowait
						s.busy += x
					}
				}
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "some ") {
				for _, f := range strings.Fields(l) {
					if v, ok := strings.CutPrefix(f, "total="); ok {
						us, _ := strconv.ParseFloat(v, 64)
						s.stallSec = us / 1e6
					}
				}
			}
		}
	}
	if cl != nil {
		s.switches, _ = cl.Counters(ctx)
	}
	return s
}

// use is what happened between s and a later sample e.
func (s cpuSample) use(e cpuSample, load1 float64) *machineUse {
	u := &machineUse{Seconds: e.at.Sub(s.at).Seconds(), CPUs: e.cpus, Load1: load1}
	if d := e.total - s.total; d > 0 {
		u.Busy = (e.busy - s.busy) / d
	}
	if u.Seconds > 0 {
		u.Stalled = (e.stallSec - s.stallSec) / u.Seconds
	}
	for name, c := range e.switches {
		d := c.Sub(s.switches[name])
		u.Switches.RxPackets += d.RxPackets
		u.Switches.TxPackets += d.TxPackets
		u.Switches.TailDrops += d.TailDrops
		u.Switches.KernelDrops += d.KernelDrops
		u.Switches.CPUSec += d.CPUSec
		u.Switches.RunQueueSec += d.RunQueueSec
	}
	return u
}

func loadAvg1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	x, _ := strconv.ParseFloat(f[0], 64)
	return x
}

// agentCounters are a job's workers' summaries, summed: how its packets fared.
type agentCounters struct {
	Timeouts   int `json:"timeouts"`    // retransmissions after the timer
	FastResent int `json:"fast_resent"` // retransmissions after three later chunks completed
	WindowCuts int `json:"window_cuts"`
	Ignored    int `json:"ignored_results"` // late duplicates, answers to spurious RESENDs
	// CPUSec and RunQueueSec: the workers' time on a CPU and runnable but waiting for one, summed.
	CPUSec      float64 `json:"cpu_s"`
	RunQueueSec float64 `json:"runq_s"`
}

// readAgentCounters sums the worker-summary lines of a job's worker logs.
func readAgentCounters(j scheduler.Job) agentCounters {
	var a agentCounters
	for _, p := range j.Procs {
		if p.Role != "worker" {
			continue
		}
		b, err := os.ReadFile(p.Log)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "worker-summary: ") {
				continue
			}
			kv := map[string]string{}
			for _, f := range strings.Fields(l[len("worker-summary: "):]) {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			n := func(k string) int { x, _ := strconv.Atoi(kv[k]); return x }
			a.Timeouts += n("resent") - n("fast_resent")
			a.FastResent += n("fast_resent")
			a.WindowCuts += n("window_cuts")
			a.Ignored += n("ignored_results")
			f := func(k string) float64 { x, _ := strconv.ParseFloat(kv[k], 64); return x / 1e3 }
			a.CPUSec += f("cpu_ms")
			a.RunQueueSec += f("runq_ms")
		}
	}
	return a
}
