package experiment

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
	"github.com/inapack/inapack/sim/eval"
)

// clusterFlags are what demo and validate share: the emulated cluster and NetPack's model of it.
type clusterFlags struct {
	topology, sw, bin, dir, prefix *string
	rtt                            *time.Duration
	window                         *int
}

func addClusterFlags(fs *flag.FlagSet, dir string) clusterFlags {
	return clusterFlags{
		topology: fs.String("topology", "bmv2/topologies/two-racks/topology.json", "topology.json with host GPUs and link rates"),
		sw:       fs.String("switch", envOr("SWITCH", "auto"), "ref or auto (the reference switch), or bmv2"),
		bin:      fs.String("bin", "build/bin", "directory of refswitch, inactl, ina-scheduler, ina-ps, ina-worker"),
		dir:      fs.String("dir", dir, "directory for configs, state and logs"),
		prefix:   fs.String("prefix", fmt.Sprintf("c%d", os.Getpid()%10000), "prefix of namespaces and links (at most 5 characters)"),
		rtt:      fs.Duration("rtt", time.Millisecond, "slot hold time in NetPack's model of the emulated switches"),
		window:   fs.Int("window", 16, "aggregator slots per job"),
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Demo is ina-cluster demo: the trace under each policy through the scheduler service on an
// emulated cluster, measured JCTs beside the simulator's.
func Demo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	cf := addClusterFlags(fs, "build/cluster-demo")
	tracePath := fs.String("trace", "scheduler/examples/demo-trace.json", "jobs with submit times (JSON)")
	policies := fs.String("policies", "netpack,gpu-balance", "placement policies to run the trace under, in order (all: every registered one)")
	repeat := fs.Int("repeat", 1, "run every policy this many times, in rounds (each round runs every policy once, so load drift hits all alike)")
	summaryPath := fs.String("summary", "", "write the policies' measured and simulated mean JCTs to this JSON file (the evaluation report's section 11 reads docs/packets-summary.json)")
	timeout := fs.Duration("timeout", 6*time.Minute, "give up on a policy's run after this long")
	work := fs.Float64("work", 1, "scale every job's iterations (e.g. 0.2 for BMv2, an order of magnitude slower)")
	fs.Parse(args)
	if !(*work > 0) {
		return fmt.Errorf("--work %v: want a positive factor", *work)
	}
	if *repeat < 1 {
		return fmt.Errorf("--repeat %d: want 1 or more", *repeat)
	}
	pols := strings.Split(*policies, ",")
	if *policies == "all" {
		pols = netpack.PolicyNames()
	}
	if os.Geteuid() != 0 {
		fmt.Println("SKIP: cluster-demo needs root (network namespaces, veth links, AF_PACKET): run make cluster-demo as root")
		return nil
	}
	target, bmv2JSON, p4info, err := chooseSwitch(*cf.sw)
	if err != nil {
		return err
	}
	trace, err := scheduler.LoadTrace(*tracePath)
	if err != nil {
		return err
	}
	for i := range trace {
		trace[i].Iterations = scaled(trace[i].Iterations, *work)
	}
	topo, err := topology.Load(*cf.topology)
	if err != nil {
		return err
	}
	cluster, err := scheduler.NewCluster(topo, scheduler.ClusterParams{RTT: *cf.rtt})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("cluster-demo: switch=%s topology=%s (%d machines, %d GPUs) trace=%s (%d jobs) logs=%s\n",
		target, *cf.topology, len(cluster.Hosts), cluster.Model.TotalGPUs(), *tracePath, len(trace), *cf.dir)
	var runs []*traceRun // the first round's
	var problems []string
	var cal *calibration
	sum := eval.Packets{Switch: target, Topology: *cf.topology, Trace: *tracePath, Jobs: len(trace), Work: *work}
	for round := range *repeat {
		for i, pol := range pols {
			load := loadAvg1()
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			r, err := runTrace(rctx, cf, target, bmv2JSON, p4info, pol, fmt.Sprintf("%s%d", *cf.prefix, i), trace, cal == nil, *work)
			cancel()
			if err != nil {
				return fmt.Errorf("%s (round %d): %w", pol, round+1, err)
			}
			if cal == nil {
				cal = r.cal
			}
			problems = append(problems, r.problems...)
			if round == 0 {
				// The simulator is deterministic for a calibration: one prediction per policy.
				if r.predicted, err = predictJCT(topo, *cal, pol, trace); err != nil {
					return fmt.Errorf("simulating %s: %w", pol, err)
				}
				runs = append(runs, r)
				sum.Policies = append(sum.Policies, eval.PacketPolicy{Policy: pol, SimMeanJCT: round3(meanOf(r.predicted, trace))})
			}
			pp := &sum.Policies[i]
			pp.MeasuredMeanJCT = append(pp.MeasuredMeanJCT, round3(measuredMean(r, trace)))
			pp.Load1 = append(pp.Load1, round3(load))
		}
		// After every round, so that an interrupted run keeps the rounds it finished.
		if sum.Repeats = round + 1; *summaryPath != "" && len(problems) == 0 {
			if err := writePackets(*summaryPath, &sum); err != nil {
				return err
			}
			fmt.Printf("cluster-demo: round %d of %d: wrote %s\n", round+1, *repeat, *summaryPath)
		}
	}
	printDemo(os.Stdout, trace, runs)
	if *repeat > 1 || len(pols) > 2 {
		sum.Table(os.Stdout)
	}

	if len(problems) > 0 {
		fmt.Printf("cluster-demo: FAIL: %s\n", strings.Join(problems, "; "))
		return errors.New("not every job completed exact")
	}
	fmt.Println("cluster-demo: OK")
	return nil
}

// traceRun is one policy's run of the trace.
type traceRun struct {
	policy    string
	cal       *calibration
	jobs      map[string]scheduler.Job // by name
	predicted map[string]float64       // simulator's JCT by name
	problems  []string
}

// runTrace builds the emulated cluster, starts ina-scheduler serve on it and replays the trace
// through its API, until every job ended; with calibrate, a lone job runs first to calibrate the
// simulator's links and RTT (validate's calibration).
func runTrace(ctx context.Context, cf clusterFlags, target, bmv2JSON, p4info, policy, prefix string, trace []scheduler.TraceJob,
	calibrate bool, work float64) (*traceRun, error) {
	dir := filepath.Join(*cf.dir, policy)
	_ = os.RemoveAll(dir) // state of an earlier run must not be re-attached
	cl, err := emu.Start(ctx, emu.Config{Topology: *cf.topology, Prefix: prefix, Switch: target, BMv2JSON: bmv2JSON,
		P4Info: p4info, Bin: *cf.bin, Dir: dir})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	hosts := filepath.Join(dir, "hosts.json")
	if err := cl.WriteHosts(hosts); err != nil {
		return nil, err
	}
	listen, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	sched, err := procs.Start("ina-scheduler", filepath.Join(dir, "scheduler.log"), procs.Options{}, filepath.Join(*cf.bin, "ina-scheduler"), "serve", "--topology", *cf.topology,
		"--hosts", hosts, "--controller", cl.API, "--policy", policy, "--state", filepath.Join(dir, "state"),
		"--listen", listen, "--bin", *cf.bin, "--window", fmt.Sprint(*cf.window), "--rtt", cf.rtt.String())
	if err != nil {
		return nil, err
	}
	c := scheduler.NewClient(listen, "")
	defer func() {
		// Nothing may outlive the namespaces: cancel what still runs, then stop the scheduler.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if jobs, err := c.Jobs(cctx); err == nil {
			for _, j := range jobs {
				if !j.State.Final() {
					_ = c.Cancel(cctx, j.ID)
				}
			}
		}
		sched.Stop(10 * time.Second)
	}()
	if err := waitAPI(ctx, sched, c); err != nil {
		return nil, err
	}
	fmt.Printf("cluster-demo: %s: cluster up (%s switches, controller %s, scheduler %s)\n", policy, target, cl.API, listen)
	r := &traceRun{policy: policy, jobs: map[string]scheduler.Job{}}
	if calibrate {
		if r.cal, err = runCalibration(ctx, c, cl.Topo, *cf.window, work); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	next := 0
	ids := map[int]string{}
	lastPrint := time.Time{}
	for {
		for next < len(trace) && time.Since(t0).Seconds() >= trace[next].SubmitSec {
			j, err := c.Submit(ctx, trace[next].Submission)
			if err != nil {
				return nil, fmt.Errorf("submit %s: %w", trace[next].Name, err)
			}
			ids[j.ID] = trace[next].Name
			next++
		}
		jobs, err := c.Jobs(ctx)
		if err != nil {
			return nil, err
		}
		counts := map[scheduler.State]int{}
		for _, j := range jobs {
			if name, ok := ids[j.ID]; ok { // not the calibration job
				counts[j.State]++
				r.jobs[name] = j
			}
		}
		final := counts[scheduler.Completed] + counts[scheduler.Failed] + counts[scheduler.Cancelled]
		if time.Since(lastPrint) >= 5*time.Second || (next == len(trace) && final == len(trace)) {
			fmt.Printf("cluster-demo: %s t=%3.0fs: submitted %d/%d, queued %d, running %d, completed %d, failed %d\n", policy,
				time.Since(t0).Seconds(), next, len(trace), counts[scheduler.Queued], counts[scheduler.Running]+counts[scheduler.Starting],
				counts[scheduler.Completed], counts[scheduler.Failed])
			lastPrint = time.Now()
		}
		if next == len(trace) && final == len(trace) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the trace did not finish: %w (scheduler log: %s)", ctx.Err(), sched.Log)
		case <-sched.Done():
			return nil, sched.Exited()
		case <-time.After(time.Second):
		}
	}
	for _, tj := range trace {
		j := r.jobs[tj.Name]
		switch {
		case j.State != scheduler.Completed:
			r.problems = append(r.problems, fmt.Sprintf("%s %s: %s (%s)", policy, tj.Name, j.State, j.Reason))
		case j.Progress.Wrong != 0 || j.Progress.Exact != tj.Iterations*len(j.Placement.Workers):
			r.problems = append(r.problems, fmt.Sprintf("%s %s: %d exact and %d wrong all-reduces, want %d exact",
				policy, tj.Name, j.Progress.Exact, j.Progress.Wrong, tj.Iterations*len(j.Placement.Workers)))
		}
	}
	return r, nil
}

// runCalibration runs validate's lone calibration job on the first rack with three hosts.
func runCalibration(ctx context.Context, c *scheduler.Client, topo *topology.Topology, window int, work float64) (*calibration, error) {
	var rack []string
	for _, r := range hostRacks(topo) {
		if len(r) >= 3 {
			rack = r
			break
		}
	}
	if rack == nil {
		return nil, fmt.Errorf("calibration needs a rack of three hosts")
	}
	mj := calibrationJob(rack[:2], rack[2])
	mj.Iterations = scaled(mj.Iterations, work)
	var runs []scheduler.Job
	for range calibrationRuns {
		j, err := c.Submit(ctx, mj.submission())
		if err != nil {
			return nil, fmt.Errorf("calibration job: %w", err)
		}
		for !j.State.Final() {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			if j, err = c.Job(ctx, j.ID); err != nil {
				return nil, err
			}
		}
		runs = append(runs, j)
	}
	link := 1000.0 // scheduler.NewCluster's capacity for a link without a rate
	for _, l := range topo.Links {
		if (l.A == rack[0] || l.B == rack[0]) && l.Mbps > 0 {
			link = l.Mbps
		}
	}
	cal, err := calibrate(runs, link, window)
	return &cal, err
}

// printDemo prints each job's placement and JCT under each policy beside the simulator's JCT.
func printDemo(out io.Writer, trace []scheduler.TraceJob, runs []*traceRun) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "job\tgpus\tmodel\titers\tKiB/iter\tsubmit_s\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s: placement\tjct_s\tsim_s\t", r.policy)
	}
	fmt.Fprintln(tw)
	sums := make([][2]float64, len(runs))
	for _, tj := range trace {
		m, _ := tj.Profile()
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.0f\t%.0f\t", tj.Name, tj.GPUs, m.Name, tj.Iterations, m.GradientBytes/1024, tj.SubmitSec)
		for i, r := range runs {
			j := r.jobs[tj.Name]
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t", placementText(j.Placement), jctText(j), r.predicted[tj.Name])
			sums[i][0] += j.JCTSec
			sums[i][1] += r.predicted[tj.Name]
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "mean\t\t\t\t\t\t")
	for i := range runs {
		n := float64(len(trace))
		fmt.Fprintf(tw, "\t%.1f\t%.1f\t", sums[i][0]/n, sums[i][1]/n)
	}
	fmt.Fprintln(tw)
	tw.Flush()
	if len(runs) >= 2 && sums[0][0] > 0 && sums[1][0] > 0 {
		fmt.Printf("cluster-demo: mean JCT %s %.1f s vs %s %.1f s: %+.1f%% measured, %+.1f%% simulated\n",
			runs[0].policy, sums[0][0]/float64(len(trace)), runs[1].policy, sums[1][0]/float64(len(trace)),
			100*(sums[0][0]/sums[1][0]-1), 100*(sums[0][1]/sums[1][1]-1))
	}
}

func placementText(p *scheduler.Placement) string {
	if p == nil {
		return "-"
	}
	var ws []string
	for _, w := range p.Workers {
		ws = append(ws, fmt.Sprintf("%s:%d", w.Host, w.GPUs))
	}
	ina := ""
	if p.INA && p.SwitchJob != 0 {
		ina = " ina"
	}
	return strings.Join(ws, ",") + " ps=" + p.PS + ina
}

func jctText(j scheduler.Job) string {
	if j.State != scheduler.Completed {
		return string(j.State)
	}
	return fmt.Sprintf("%.1f", j.JCTSec)
}

// waitAPI waits until the scheduler p answers on c, failing early if p exits.
func waitAPI(ctx context.Context, p *procs.Proc, c *scheduler.Client) error {
	for {
		if _, err := c.Cluster(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
			return p.Exited()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
