package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/scheduler"
)

// results is what validate measured and predicted (build/validate/results.json).
type results struct {
	Switch   string `json:"switch"`
	Topology string `json:"topology"`
	Window   int    `json:"window"`
	// ECNThreshold is the switches' marking threshold (egress queue depth in packets); 0: never
	// mark (the switch default).
	ECNThreshold int `json:"ecn_threshold,omitempty"`
	// SwitchPacketSec is the per-packet switch cost fitted per setting (predict.go).
	SwitchPacketSec map[string]float64 `json:"switch_packet_s,omitempty"`
	// Calibration per switch setting (group name), measured when its cluster came up.
	Calibration map[string]calibration `json:"calibration"`
	Mixes       []mix                  `json:"mixes"`
	Jobs        []jobResult            `json:"jobs"`
}

// calibration is what one lone job measured, turned into the model's one calibrated input: the
// chunk round trip, which caps every job at window x chunk / RTT and sets how long slots are held.
type calibration struct {
	Job          string  `json:"job"`
	MeasuredMbps float64 `json:"measured_mbps"`
	LinkMbps     float64 `json:"link_mbps"`
	// RTTSec is the lone job's chunk round trip: window x chunk bytes / its goodput (a lone job
	// on idle links is held back by its window, not by a link).
	RTTSec float64 `json:"rtt_s"`
	Window int     `json:"window"`
	// Wide is a lone INA job as wide as a rack allows and WideMbps what it got: the simulator's
	// per-packet switch cost is fitted to it (predict.go).
	Wide     mixJob  `json:"wide"`
	WideMbps float64 `json:"wide_mbps"`
}

// jobResult is one job of one mix: measured and predicted.
type jobResult struct {
	Mix, Job string
	Group    string
	FanIn    int
	SlotBase int // the service gave the job slots [SlotBase, SlotBase+window)
	// SwitchPriority is the ESA priority the switches compared (the service's priority_cap, the
	// mix's 0-255 scaled to 0-31): the models rank the job by it (nil in older results).
	SwitchPriority *int `json:",omitempty"`
	CrossRack, INA bool
	State          string
	Exact          bool
	MeasuredMbps   float64
	MeasuredJCT    float64 // the job's run: first worker's start to last worker's end
	ResentPct      float64 // the workers' retransmissions, % of data packets sent
	// Agents sums what the workers' summaries say of their packets (timeouts, window cuts, ...).
	Agents        agentCounters `json:",omitempty"`
	EstimatedMbps float64
	EstimatedJCT  float64
	SimulatedMbps float64 `json:",omitempty"`
	SimulatedJCT  float64 `json:",omitempty"`
	Reason        string  `json:",omitempty"`
}

var defaultGroups = []group{
	{Name: "esa-16", Release: "esa", Preempt: true, Slots: 16},
	{Name: "atp-16", Release: "atp", Preempt: false, Slots: 16},
	{Name: "esa-64", Release: "esa", Preempt: true, Slots: 64},
}

// Validate is ina-cluster validate: job mixes on fixed placements, measured throughput and JCT
// against the estimator's and the simulator's predictions.
func Validate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ExitOnError)
	cf := addClusterFlags(fs, "build/validate")
	fs.Lookup("topology").DefValue = "scheduler/examples/validate-topology.json"
	fs.Set("topology", "scheduler/examples/validate-topology.json")
	perGroup := fs.Int("mixes", 8, "mixes per switch setting (three settings: ESA and ATP on 16 slots, ESA on 64)")
	seed := fs.Uint64("seed", 1, "seed of the mixes")
	doc := fs.String("doc", "", "write the report (Markdown) and its plots here, e.g. docs/validation.md")
	from := fs.String("from", "", "predict and report from an earlier run's results.json instead of running")
	ecn := fs.Int("ecn-threshold", 0, "switches mark ECN above this egress queue depth (packets); 0: never (the switch default)")
	work := fs.Float64("work", 1, "scale every job's iterations (e.g. 0.25 for BMv2, an order of magnitude slower)")
	only := fs.String("only", "", "run only these mixes (comma-separated ids, e.g. 4,13,17; the settings they need calibrate as usual)")
	fs.Set("window", "8")
	fs.Parse(args)
	var res *results
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		res = &results{}
		if err := json.Unmarshal(b, res); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
	} else {
		if os.Geteuid() != 0 {
			fmt.Println("SKIP: validate needs root (network namespaces, veth links, AF_PACKET): run make validate as root")
			return nil
		}
		target, bmv2JSON, p4info, err := chooseSwitch(*cf.sw)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if !(*work > 0) {
			return fmt.Errorf("--work %v: want a positive factor", *work)
		}
		keep, err := parseOnly(*only)
		if err != nil {
			return err
		}
		res, err = measure(ctx, cf, target, bmv2JSON, p4info, *seed, *perGroup, *ecn, *work, keep)
		if err != nil {
			return err
		}
		if err := save(res, filepath.Join(*cf.dir, "results.json")); err != nil {
			return err
		}
	}
	if err := predict(res); err != nil {
		return err
	}
	if *from == "" {
		if err := save(res, filepath.Join(*cf.dir, "results.json")); err != nil {
			return err
		}
	}
	rep := report(res)
	fmt.Print(rep.text)
	if *doc != "" {
		if err := rep.write(*doc, res); err != nil {
			return err
		}
		fmt.Printf("validate: report written to %s\n", *doc)
	}
	var bad []string
	for _, j := range res.Jobs {
		if j.State != string(scheduler.Completed) || !j.Exact {
			bad = append(bad, fmt.Sprintf("%s %s: %s %s", j.Mix, j.Job, j.State, j.Reason))
		}
	}
	if len(bad) > 0 {
		fmt.Printf("validate: FAIL: %s\n", strings.Join(bad, "; "))
		return errors.New("not every job completed exact")
	}
	fmt.Println("validate: OK")
	return nil
}

func save(res *results, path string) error {
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// measure runs the calibration job and every mix, a cluster per switch setting.
func measure(ctx context.Context, cf clusterFlags, target, bmv2JSON, p4info string, seed uint64, perGroup, ecn int, work float64,
	keep func(id int) bool) (*results, error) {
	topo, err := topology.Load(*cf.topology)
	if err != nil {
		return nil, err
	}
	racks := hostRacks(topo)
	gpus := topo.Hosts[racks[0][0]].GPUs
	mixes := slices.DeleteFunc(genMixes(seed, defaultGroups, perGroup, racks, gpus), func(m mix) bool { return !keep(m.ID) })
	for i := range mixes {
		for k := range mixes[i].Jobs {
			mixes[i].Jobs[k].Iterations = scaled(mixes[i].Jobs[k].Iterations, work)
		}
	}
	res := &results{Switch: target, Topology: *cf.topology, Window: *cf.window, ECNThreshold: ecn, Mixes: mixes,
		Calibration: map[string]calibration{}}
	fmt.Printf("validate: switch=%s topology=%s, %d mixes in %d switch settings, logs in %s\n", target, *cf.topology,
		len(mixes), len(defaultGroups), *cf.dir)
	for gi, g := range defaultGroups {
		if !slices.ContainsFunc(mixes, func(m mix) bool { return m.Group == g.Name }) {
			continue
		}
		err := withGroup(ctx, cf, target, bmv2JSON, p4info, g, ecn, fmt.Sprintf("%s%d", *cf.prefix, gi), func(run func(m *mix) ([]scheduler.Job, error)) error {
			// The machine is shared: what a lone job gets drifts with the load, so each setting
			// calibrates when its cluster comes up, before any of its mixes.
			var lone []scheduler.Job
			for range calibrationRuns {
				lj := calibrationJob(racks[0][:2], racks[0][2])
				lj.Iterations = scaled(lj.Iterations, work)
				jobs, err := run(&mix{ID: -1, Group: g.Name, Jobs: []mixJob{lj}})
				if err != nil {
					return err
				}
				lone = append(lone, jobs[0])
			}
			cal, err := calibrate(lone, topo.Links[0].Mbps, *cf.window)
			if err != nil {
				return err
			}
			// A wide INA job alone: what it falls short of the narrow one is per-packet work in
			// the switch (fan-in packets in per chunk), the second calibrated input.
			var wide []float64
			wj := wideCalibrationJob(racks[0])
			wj.Iterations = scaled(wj.Iterations, work)
			for range calibrationRuns {
				jobs, err := run(&mix{ID: -1, Group: g.Name, Jobs: []mixJob{wj}})
				if err != nil {
					return err
				}
				if jobs[0].State != scheduler.Completed {
					return fmt.Errorf("wide calibration job: %s %s", jobs[0].State, jobs[0].Reason)
				}
				wide = append(wide, jobs[0].Progress.ThroughputMbps)
			}
			slices.Sort(wide)
			cal.Wide, cal.WideMbps = wj, wide[len(wide)/2]
			fmt.Printf("calibration: a lone INA job of fan-in %d gets %.2f Mbit/s\n", len(wj.Workers), cal.WideMbps)
			res.Calibration[g.Name] = cal
			for _, m := range mixes {
				if m.Group != g.Name {
					continue
				}
				jobs, err := run(&m)
				if err != nil {
					return err
				}
				for i := range res.Mixes {
					if res.Mixes[i].ID == m.ID {
						res.Mixes[i].Machine = m.Machine
					}
				}
				for i, mj := range m.Jobs {
					j := jobs[i]
					r := jobResult{Mix: fmt.Sprintf("m%02d", m.ID), Job: mj.Name, Group: g.Name, FanIn: len(mj.Workers),
						CrossRack: crossRack(racks, mj.Workers), INA: mj.INA, State: string(j.State), Reason: j.Reason,
						MeasuredMbps: j.Progress.ThroughputMbps, MeasuredJCT: j.RunSec, SlotBase: slotBase(j), SwitchPriority: switchPriority(j),
						ResentPct: 100 * float64(j.Progress.Resent) / float64(max(j.Progress.Sent, 1)), Agents: readAgentCounters(j),
						Exact: j.Progress.Wrong == 0 && j.Progress.Exact == mj.Iterations*len(mj.Workers)}
					res.Jobs = append(res.Jobs, r)
				}
				u := m.Machine
				fmt.Printf("validate: mix %02d (%s): %d jobs done in %.1f s; CPUs %.0f%% busy, a task waiting for one %.0f%% of the time (load %.1f at start); switches: %.1f CPU-s, %.1f s waiting for a CPU, %d tail drops, %d kernel drops\n",
					m.ID, g.Name, len(m.Jobs), u.Seconds, 100*u.Busy, 100*u.Stalled, u.Load1, u.Switches.CPUSec, u.Switches.RunQueueSec, u.Switches.TailDrops, u.Switches.KernelDrops)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Name, err)
		}
	}
	return res, nil
}

// calibrationJob is the lone job whose measurement sets the model's RTT.
func calibrationJob(workers []string, ps string) mixJob {
	return mixJob{Name: "calibration", Workers: workers, PS: ps, INA: true, Iterations: 150, Bytes: 65536, ComputeSec: 0.005}
}

// wideCalibrationJob is the lone INA job as wide as one rack allows, its PS on the rack's last host.
func wideCalibrationJob(rack []string) mixJob {
	j := calibrationJob(rack[:len(rack)-1], rack[len(rack)-1])
	j.Name = "calibration-wide"
	return j
}

// calibrationRuns is how many times the lone job runs; the median counts, since a run that met a
// burst of other work on this shared machine is slower.
const calibrationRuns = 3

// calibrate turns the lone job's measurements into the model's inputs.
func calibrate(runs []scheduler.Job, linkMbps float64, window int) (calibration, error) {
	var mbps []float64
	for _, j := range runs {
		if j.State != scheduler.Completed || !(j.Progress.ThroughputMbps > 0) {
			return calibration{}, fmt.Errorf("calibration job: %s %s", j.State, j.Reason)
		}
		mbps = append(mbps, j.Progress.ThroughputMbps)
	}
	slices.Sort(mbps)
	med := mbps[len(mbps)/2]
	c := calibration{Job: fmt.Sprintf("one job, 2 workers and its PS on one ToR, alone; median of %d runs", len(runs)),
		MeasuredMbps: med, LinkMbps: linkMbps, Window: window, RTTSec: float64(window*chunkBytes*8) / (med * 1e6)}
	fmt.Printf("calibration: a lone job gets %.2f Mbit/s on %.0f Mbit/s links: chunk round trip %.2f ms at a window of %d\n",
		c.MeasuredMbps, linkMbps, c.RTTSec*1e3, window)
	return c, nil
}

// chunkBytes is one packet's gradient payload (one aggregator slot); a link carries chunkBytes of
// gradient per wire.FrameLen bytes.
const chunkBytes = wire.NumValues * 4

// windowBps is the most a job's window lets it move: window chunks per round trip.
func (c calibration) windowBps(window int) float64 { return float64(window*chunkBytes) / c.RTTSec }

// withGroup builds the emulated cluster with a group's switch settings and the scheduler service
// on it, and hands f a function that runs one mix to the end.
func withGroup(ctx context.Context, cf clusterFlags, target, bmv2JSON, p4info string, g group, ecn int, prefix string,
	f func(run func(m *mix) ([]scheduler.Job, error)) error) error {
	dir := filepath.Join(*cf.dir, g.Name)
	_ = os.RemoveAll(dir)
	settings := &cp.Settings{Preempt: &g.Preempt, Release: g.Release, ActiveSlots: &g.Slots}
	if ecn > 0 {
		settings.ECNThreshold = &ecn
	}
	cl, err := emu.Start(ctx, emu.Config{Topology: *cf.topology, Prefix: prefix, Switch: target, BMv2JSON: bmv2JSON,
		P4Info: p4info, Bin: *cf.bin, Dir: dir, Settings: settings})
	if err != nil {
		return err
	}
	defer cl.Close()
	topo := *cl.Topo
	topo.INA.Settings = settings
	c, err := scheduler.NewCluster(&topo, scheduler.ClusterParams{RTT: *cf.rtt})
	if err != nil {
		return err
	}
	hosts := map[string]scheduler.HostAccess{}
	for h, ns := range cl.Hosts {
		hosts[h] = scheduler.HostAccess{Netns: ns.Netns, Iface: ns.Iface}
	}
	logf, err := os.Create(filepath.Join(dir, "scheduler.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	svc, err := scheduler.New(scheduler.Config{Cluster: c, Hosts: hosts, Controller: api.NewClient(cl.API, ""), Bin: *cf.bin,
		StateDir: filepath.Join(dir, "state"), Window: *cf.window, ProgressTimeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logf, nil))})
	if err != nil {
		return err
	}
	defer func() {
		for _, j := range svc.Jobs() {
			if !j.State.Final() {
				_ = svc.Cancel(j.ID)
			}
		}
		svc.Close()
	}()
	return f(func(m *mix) ([]scheduler.Job, error) {
		load, before := loadAvg1(), sampleCPU(ctx, cl)
		jobs, err := runMix(ctx, svc, *m)
		m.Machine = before.use(sampleCPU(ctx, cl), load)
		return jobs, err
	})
}

// runMix submits a mix's jobs together and waits for all of them.
func runMix(ctx context.Context, svc *scheduler.Service, m mix) ([]scheduler.Job, error) {
	var ids []int
	for _, mj := range m.Jobs {
		j, err := svc.Submit(mj.submission())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", mj.Name, err)
		}
		ids = append(ids, j.ID)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var out []scheduler.Job
		done := true
		for _, id := range ids {
			j, _ := svc.Job(id)
			out = append(out, j)
			done = done && j.State.Final()
		}
		if done {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mix %d did not finish in 5 minutes", m.ID)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scaled is n iterations scaled by f, at least 5 (the first is not timed).
func scaled(n int, f float64) int { return max(5, int(math.Round(float64(n)*f))) }

func switchPriority(j scheduler.Job) *int {
	if j.Placement == nil {
		return nil
	}
	p := j.Placement.PriorityCap
	return &p
}

func slotBase(j scheduler.Job) int {
	if j.Placement == nil {
		return 0
	}
	return j.Placement.SlotBase
}

// hostRacks lists the GPU hosts under each switch, racks and hosts in name order.
func hostRacks(t *topology.Topology) [][]string {
	by := map[string][]string{}
	for _, l := range t.Links {
		for _, pair := range [][2]string{{l.A, l.B}, {l.B, l.A}} {
			if h, ok := t.Hosts[pair[0]]; ok && h.GPUs > 0 {
				sw, _, _ := t.ParseEndpoint(pair[1])
				by[sw] = append(by[sw], pair[0])
			}
		}
	}
	var out [][]string
	for _, sw := range slices.Sorted(maps.Keys(by)) {
		hs := by[sw]
		slices.SortFunc(hs, func(a, b string) int { return cmpHost(a, b) })
		out = append(out, hs)
	}
	return out
}

// cmpHost orders h2 before h10.
func cmpHost(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func crossRack(racks [][]string, ws []string) bool {
	for _, r := range racks {
		in := 0
		for _, w := range ws {
			if slices.Contains(r, w) {
				in++
			}
		}
		if in == len(ws) {
			return false
		}
	}
	return true
}

// parseOnly turns --only's list of mix ids into a filter (every mix when empty).
func parseOnly(s string) (func(id int) bool, error) {
	if strings.TrimSpace(s) == "" {
		return func(int) bool { return true }, nil
	}
	ids := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(f), "m"))
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--only %q: want mix ids such as 4,13,17", s)
		}
		ids[id] = true
	}
	return func(id int) bool { return ids[id] }, nil
}
