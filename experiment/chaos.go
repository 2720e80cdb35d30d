package experiment

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// Chaos is ina-cluster chaos: jobs run through the scheduler service on an emulated cluster while
// faults hit its switches, controller, scheduler, agents and links at seeded random times; every
// job's end is checked against the promise of the faults that hit it (docs/faults.md), and what
// the jobs held must all be freed.
func Chaos(args []string) error {
	fs := flag.NewFlagSet("chaos", flag.ExitOnError)
	cf := addClusterFlags(fs, "build/chaos")
	nFaults := fs.Int("faults", 110, "faults to inject, the kinds taken in turn in a seeded order")
	seed := fs.Uint64("seed", 1, "seed of the jobs, the faults' kinds, targets and times")
	live := fs.Int("live", 5, "jobs kept submitted and unfinished")
	progress := fs.Duration("progress-timeout", 10*time.Second, "the workers' progress timeout T (the scheduler's --progress-timeout)")
	only := fs.String("kinds", "", "comma-separated fault kinds to inject (default: all the switch supports)")
	timeout := fs.Duration("timeout", 20*time.Minute, "give up after this long")
	fs.Parse(args)
	if os.Geteuid() != 0 {
		fmt.Println("SKIP: chaos needs root (network namespaces, veth links, AF_PACKET): run make chaos as root")
		return nil
	}
	if *nFaults < 1 || *live < 1 || *progress < time.Second {
		return fmt.Errorf("--faults and --live want at least 1, --progress-timeout at least 1s")
	}
	target, bmv2JSON, p4info, err := chooseSwitch(*cf.sw)
	if err != nil {
		return err
	}
	topo, err := topology.Load(*cf.topology)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	_ = os.RemoveAll(*cf.dir)
	r := &chaosRun{cf: cf, T: *progress, nFaults: *nFaults, live: *live, jobs: map[int]scheduler.Job{}, hitBy: map[int][]*fault{},
		rng: rand.New(rand.NewPCG(*seed, 1)), jobRng: rand.New(rand.NewPCG(*seed, 2)), tor: map[string]string{}, isToR: map[string]bool{}}
	start := time.Now()
	cl, err := emu.Start(ctx, emu.Config{Topology: *cf.topology, Prefix: *cf.prefix, Switch: target, BMv2JSON: bmv2JSON,
		P4Info: p4info, Bin: *cf.bin, Dir: *cf.dir, FaultAPI: target == "ref"})
	if err != nil {
		return err
	}
	r.cl = cl
	closed := false
	closeCluster := func() {
		if !closed {
			closed = true
			r.stopScheduler()
			cl.Close()
		}
	}
	defer closeCluster()
	if err := r.startScheduler(ctx, topo); err != nil {
		return err
	}
	r.kinds, err = r.chooseKinds(ctx, target, *only)
	if err != nil {
		return err
	}
	var names []string
	for _, k := range r.kinds {
		names = append(names, k.name)
	}
	fmt.Printf("chaos: switch=%s topology=%s seed=%d faults=%d T=%v kinds: %s; logs in %s\n", target, *cf.topology, *seed,
		*nFaults, r.T, strings.Join(names, ", "), *cf.dir)
	runErr := r.run(ctx)
	leaks := r.leaks(ctx)
	closeCluster()
	for _, x := range emu.Residue(*cf.prefix) {
		leaks = append(leaks, leak{what: x + " after the cluster was closed"})
	}
	ok := r.report(os.Stdout, leaks, runErr, time.Since(start))
	if !ok {
		return errors.New("the promise was broken")
	}
	return nil
}

// chaosRun is one chaos run's cluster, scheduler and record.
type chaosRun struct {
	cf      clusterFlags
	T       time.Duration
	nFaults int
	live    int
	kinds   []*faultKind
	rng     *rand.Rand // faults: kinds' order, targets, gaps
	jobRng  *rand.Rand // the jobs submitted
	// corruptField is the reference switch's name for its corruption rate ("" without one).
	corruptField string

	cl        *emu.Cluster
	sched     *procs.Proc
	schedArgv []string
	schedRuns int
	c         *scheduler.Client
	ctl       *api.Client

	switches []string
	tor      map[string]string // host -> its switch
	isToR    map[string]bool

	order     []int // job ids, in submission order
	jobs      map[int]scheduler.Job
	hitBy     map[int][]*fault
	faults    []*fault
	active    *fault // the fault being injected: jobs that start meanwhile are hit too
	submitted int
	submit    bool // keep live jobs submitted
	lastPrint time.Time
	t0        time.Time
}

func (r *chaosRun) startScheduler(ctx context.Context, topo *topology.Topology) error {
	hosts := filepath.Join(*r.cf.dir, "hosts.json")
	if err := r.cl.WriteHosts(hosts); err != nil {
		return err
	}
	listen, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	r.schedArgv = []string{filepath.Join(*r.cf.bin, "ina-scheduler"), "serve", "--topology", *r.cf.topology, "--hosts", hosts,
		"--controller", r.cl.API, "--policy", "netpack", "--state", filepath.Join(*r.cf.dir, "state"), "--listen", listen,
		"--bin", *r.cf.bin, "--window", fmt.Sprint(*r.cf.window), "--rtt", r.cf.rtt.String(), "--progress-timeout", r.T.String()}
	r.c = scheduler.NewClient(listen, "")
	r.ctl = api.NewClient(r.cl.API, "")
	if err := r.execScheduler(ctx); err != nil {
		return err
	}
	ci, err := r.c.Cluster(ctx)
	if err != nil {
		return err
	}
	for _, m := range ci.Machines {
		r.tor[m.Host] = m.Switch
		r.isToR[m.Switch] = true
	}
	for sw := range topo.Switches {
		r.switches = append(r.switches, sw)
	}
	slices.Sort(r.switches)
	return nil
}

// execScheduler starts ina-scheduler serve (again: it restores its state and re-attaches to the
// agents still running) and waits for its API.
func (r *chaosRun) execScheduler(ctx context.Context) error {
	name := "scheduler"
	if r.schedRuns > 0 {
		name = fmt.Sprintf("scheduler.r%d", r.schedRuns)
	}
	r.schedRuns++
	p, err := procs.Start("ina-scheduler", filepath.Join(*r.cf.dir, name+".log"), procs.Options{}, r.schedArgv...)
	if err != nil {
		return err
	}
	r.sched = p
	return waitAPI(ctx, p, r.c)
}

// restartScheduler kills the scheduler (SIGKILL: no chance to save or clean up) and starts it again.
func (r *chaosRun) restartScheduler(ctx context.Context) error {
	pid := r.sched.Cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill the scheduler: %w", err)
	}
	<-r.sched.Done()
	return r.execScheduler(ctx)
}

// stopScheduler cancels what still runs and stops the scheduler: nothing may outlive the
// namespaces.
func (r *chaosRun) stopScheduler() {
	if r.sched == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if jobs, err := r.c.Jobs(ctx); err == nil {
		for _, j := range jobs {
			if !j.State.Final() {
				_ = r.c.Cancel(ctx, j.ID)
			}
		}
	}
	r.sched.Stop(10 * time.Second)
	r.sched = nil
}

// chooseKinds keeps the faults the switch supports (and those --kinds names).
func (r *chaosRun) chooseKinds(ctx context.Context, target, only string) ([]*faultKind, error) {
	want, unknown := map[string]bool{}, map[string]bool{}
	for _, k := range strings.Split(only, ",") {
		if k = strings.TrimSpace(k); k != "" {
			want[k], unknown[k] = true, true
		}
	}
	var out []*faultKind
	for _, k := range chaosKinds() {
		delete(unknown, k.name)
		if len(want) > 0 && !want[k.name] {
			continue
		}
		if k.egress && target != "ref" {
			fmt.Printf("chaos: %s: skipped (only the reference switch injects egress faults)\n", k.name)
			continue
		}
		if strings.HasPrefix(k.name, "corruption") {
			f, err := r.cl.FaultFields(ctx, r.switches[0])
			if err != nil {
				return nil, err
			}
			for _, name := range f {
				if strings.EqualFold(name, "corrupt") {
					r.corruptField = name
				}
			}
			if r.corruptField == "" {
				fmt.Printf("chaos: %s: skipped (this reference switch has no corruption fault)\n", k.name)
				continue
			}
			// Without the agents' end-to-end check of the values a flipped bit is summed: the
			// promise (exact sums) holds only with it. Asked for by name, it runs regardless.
			if !want[k.name] && !agentsCheckIntegrity(*r.cf.bin) {
				fmt.Printf("chaos: %s: skipped (the agents have no end-to-end integrity check; --kinds %q runs it)\n", k.name, k.name)
				continue
			}
		}
		out = append(out, k)
	}
	if len(unknown) > 0 {
		var all []string
		for _, k := range chaosKinds() {
			all = append(all, k.name)
		}
		return nil, fmt.Errorf("--kinds: unknown %v (have: %s)", slices.Sorted(maps.Keys(unknown)), strings.Join(all, ", "))
	}
	if len(out) == 0 {
		return nil, errors.New("no fault kind to inject")
	}
	return out, nil
}

// faultField is the reference switch's name of a fault rate.
func (r *chaosRun) faultField(k string) string {
	if k == "corrupt" && r.corruptField != "" {
		return r.corruptField
	}
	return k
}

// run keeps jobs submitted while it injects the faults one after another, each once the one
// before it has been recovered from and after a seeded random gap, then lets the jobs finish.
func (r *chaosRun) run(ctx context.Context) error {
	r.t0 = time.Now()
	r.submit = true
	var deck []*faultKind
	for i := 0; i < r.nFaults; i++ {
		if len(deck) == 0 {
			deck = slices.Clone(r.kinds)
			r.rng.Shuffle(len(deck), func(a, b int) { deck[a], deck[b] = deck[b], deck[a] })
		}
		k := deck[0]
		deck = deck[1:]
		r.wait(ctx, time.Duration(200+r.rng.IntN(1300))*time.Millisecond)
		var tgt string
		if !r.waitUntil(ctx, 60*time.Second, func() bool {
			if prev := r.lastFault(); prev != nil && !prev.recovered && time.Since(prev.end) < r.T+30*time.Second {
				return false
			}
			tgt = k.target(r)
			return tgt != ""
		}) {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("fault %d (%s): no target within a minute (nothing running?)", i+1, k.name)
		}
		f := &fault{kind: k, target: tgt, start: time.Now(), itersAtEnd: map[int]int{}}
		for _, id := range r.order {
			if r.hits(k, tgt, r.jobs[id]) {
				f.hit = append(f.hit, id)
				r.hitBy[id] = append(r.hitBy[id], f)
			}
		}
		r.faults = append(r.faults, f)
		r.active = f
		fmt.Printf("chaos: fault %d/%d t=%.1fs: %s on %s, hitting jobs %v\n", i+1, r.nFaults, f.start.Sub(r.t0).Seconds(), k.name, tgt, f.hit)
		f.err = k.inject(ctx, r, tgt)
		r.tick(ctx)
		f.end, r.active = time.Now(), nil
		if f.err != nil {
			return fmt.Errorf("fault %d (%s on %s): %w", i+1, k.name, tgt, f.err)
		}
		r.tick(ctx)
		for _, id := range f.hit {
			if j := r.jobs[id]; j.State == scheduler.Running || j.State == scheduler.Starting {
				f.itersAtEnd[id] = j.Progress.Iterations
			}
		}
		f.watched = true
	}
	r.submit = false
	end := time.Now().Add(3 * time.Minute)
	if !r.waitUntil(ctx, 3*time.Minute, func() bool { return r.allFinal() && r.allRecovered() }) {
		return fmt.Errorf("the jobs did not all end within 3 minutes of the last fault (until %s)", end.Format(time.TimeOnly))
	}
	return nil
}

func (r *chaosRun) lastFault() *fault {
	if len(r.faults) == 0 {
		return nil
	}
	return r.faults[len(r.faults)-1]
}

func (r *chaosRun) allFinal() bool {
	for _, id := range r.order {
		if !r.jobs[id].State.Final() {
			return false
		}
	}
	return true
}

func (r *chaosRun) allRecovered() bool {
	for _, f := range r.faults {
		if !f.recovered && len(f.itersAtEnd) > 0 {
			return false
		}
	}
	return true
}

// wait keeps the run going (jobs followed and submitted, recoveries timed) for d.
func (r *chaosRun) wait(ctx context.Context, d time.Duration) {
	r.waitUntil(ctx, d, func() bool { return false })
}

// waitUntil keeps the run going until cond holds (true) or max passed (false).
func (r *chaosRun) waitUntil(ctx context.Context, max time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(max)
	for {
		r.tick(ctx)
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(left, 200*time.Millisecond)):
		}
	}
}

// tick reads the jobs, times recoveries, submits jobs to keep the cluster busy and prints progress.
func (r *chaosRun) tick(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	jobs, err := r.c.Jobs(cctx)
	if err != nil {
		return // the scheduler is down (a fault) or busy: next tick
	}
	unfinished := 0
	for _, j := range jobs {
		r.jobs[j.ID] = j
		if !j.State.Final() {
			unfinished++
		}
	}
	if f := r.active; f != nil {
		for _, id := range r.order {
			if r.hits(f.kind, f.target, r.jobs[id]) && !slices.Contains(f.hit, id) {
				f.hit = append(f.hit, id)
				r.hitBy[id] = append(r.hitBy[id], f)
			}
		}
	}
	now := time.Now()
	for _, f := range r.faults {
		if f.recovered || !f.watched {
			continue
		}
		done := true
		for id, iters := range f.itersAtEnd {
			j := r.jobs[id]
			done = done && (j.State.Final() || j.Progress.Iterations > iters)
		}
		if done {
			f.recovered, f.recovery = true, now.Sub(f.end)
		}
	}
	for r.submit && unfinished < r.live {
		sub := r.nextJob()
		j, err := r.c.Submit(cctx, sub)
		if err != nil {
			fmt.Printf("chaos: submit %s: %v (retried)\n", sub.Name, err)
			break
		}
		r.order = append(r.order, j.ID)
		r.jobs[j.ID] = j
		unfinished++
	}
	if now.Sub(r.lastPrint) >= 10*time.Second {
		r.lastPrint = now
		counts := map[scheduler.State]int{}
		for _, id := range r.order {
			counts[r.jobs[id].State]++
		}
		fmt.Printf("chaos: t=%4.0fs faults %d/%d, jobs %d: queued %d, running %d, completed %d, failed %d\n",
			now.Sub(r.t0).Seconds(), len(r.faults), r.nFaults, len(r.order), counts[scheduler.Queued],
			counts[scheduler.Running]+counts[scheduler.Starting], counts[scheduler.Completed], counts[scheduler.Failed])
	}
}

// nextJob is the next job of the seeded trace: 1 to 4 GPUs, 64 to 256 KiB per iteration, a few
// hundred short iterations (about 10 to 30 s on the emulated cluster).
func (r *chaosRun) nextJob() scheduler.Submission {
	r.submitted++
	m, _ := netpack.Profile(netpack.ProfileNames()[r.jobRng.IntN(len(netpack.ProfileNames()))])
	compute := 0.01
	return scheduler.Submission{Name: fmt.Sprintf("chaos%03d", r.submitted), GPUs: []int{1, 2, 2, 3, 4}[r.jobRng.IntN(5)],
		Model: scheduler.ModelSpec{Model: m}, Iterations: 100 + r.jobRng.IntN(150),
		BytesPerIteration: 65536 << r.jobRng.IntN(3), ComputeSec: &compute}
}

// agentsCheckIntegrity reports whether the worker checks every result's values end to end (its
// flags mention integrity).
func agentsCheckIntegrity(bin string) bool {
	out, _ := exec.Command(filepath.Join(bin, "ina-worker"), "-h").CombinedOutput()
	return strings.Contains(strings.ToLower(string(out)), "integrity")
}
