package experiment

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/scheduler"
)

// faultKind is one fault ina-cluster chaos injects and what the system promises to every job it
// hits (docs/faults.md is this table in words): the job completes with every sum exact, or, where
// failReason is set, it may instead fail with a reason matching failReason within failWithin of
// the fault's start. Whatever the outcome, everything the job held is freed.
type faultKind struct {
	name string
	// failReason, if set, is the reason a job the fault hits may fail with; nil: it must complete
	// exact.
	failReason *regexp.Regexp
	// failWithin bounds a failure's time after the fault's start, given the workers' progress
	// timeout T.
	failWithin func(T time.Duration) time.Duration
	// egress: the reference switch's egress faults (PUT /faults), not available on BMv2.
	egress bool
	// target picks what to break among what the running jobs use; empty: nothing to hit now.
	target func(r *chaosRun) string
	// inject breaks the target, waits for as long as the fault lasts and repairs it.
	inject func(ctx context.Context, r *chaosRun, target string) error
}

// detect is how long the scheduler takes to see an agent gone and fail its job: a poll of its
// agents (250 ms) with room for a loaded machine.
const detect = 3 * time.Second

var (
	psExited     = regexp.MustCompile(`^the parameter server on \S+ exited`)
	workerDied   = regexp.MustCompile(`^worker rank \d+ on \S+ died`)
	noProgress   = regexp.MustCompile(`^worker rank \d+ on \S+ failed: .*worker: all-reduce made no progress`)
	startStopped = regexp.MustCompile(`^the scheduler stopped while starting the job`)
)

// chaosKinds are the faults, in the order of the table.
func chaosKinds() []*faultKind {
	killRestartSwitch := func(ctx context.Context, r *chaosRun, sw string) error {
		if err := r.cl.KillSwitch(sw); err != nil {
			return err
		}
		return r.cl.RestartSwitch(ctx, sw)
	}
	freeze := func(d time.Duration) func(context.Context, *chaosRun, string) error {
		return func(ctx context.Context, r *chaosRun, sw string) error {
			if err := r.cl.FreezeSwitch(sw); err != nil {
				return err
			}
			r.wait(ctx, d)
			return r.cl.ThawSwitch(sw)
		}
	}
	linkDown := func(d time.Duration) func(context.Context, *chaosRun, string) error {
		return func(ctx context.Context, r *chaosRun, host string) error {
			if err := r.cl.SetHostLink(host, false); err != nil {
				return err
			}
			r.wait(ctx, d)
			return r.cl.SetHostLink(host, true)
		}
	}
	egress := func(d time.Duration, rates map[string]any) func(context.Context, *chaosRun, string) error {
		return func(ctx context.Context, r *chaosRun, sw string) error {
			on := map[string]any{"seed": r.rng.Uint64()}
			for k, v := range rates {
				on[r.faultField(k)] = v
			}
			if err := r.cl.SetFaults(ctx, sw, on); err != nil {
				return err
			}
			r.wait(ctx, d)
			return r.cl.SetFaults(ctx, sw, map[string]any{})
		}
	}
	timeout := func(T time.Duration) time.Duration { return T + detect }
	return []*faultKind{
		{name: "switch kill+restart", target: (*chaosRun).busySwitch, inject: killRestartSwitch},
		{name: "controller kill+restart", target: func(*chaosRun) string { return "inactl" },
			inject: func(ctx context.Context, r *chaosRun, _ string) error {
				if err := r.cl.KillController(); err != nil {
					return err
				}
				return r.cl.StartController(ctx)
			}},
		{name: "scheduler kill+restart", target: func(*chaosRun) string { return "ina-scheduler" },
			failReason: startStopped, failWithin: func(time.Duration) time.Duration { return 10 * time.Second },
			inject: func(ctx context.Context, r *chaosRun, _ string) error { return r.restartScheduler(ctx) }},
		{name: "PS killed", target: (*chaosRun).busyJob, failReason: psExited,
			failWithin: func(time.Duration) time.Duration { return detect },
			inject:     func(ctx context.Context, r *chaosRun, job string) error { return r.killAgent(job, "ps") }},
		{name: "worker killed", target: (*chaosRun).busyJob, failReason: workerDied,
			failWithin: func(time.Duration) time.Duration { return detect },
			inject:     func(ctx context.Context, r *chaosRun, job string) error { return r.killAgent(job, "worker") }},
		{name: "host link down 1s", target: (*chaosRun).busyHost, inject: linkDown(time.Second)},
		{name: "host link down 30s", target: (*chaosRun).busyHost, inject: linkDown(30 * time.Second),
			failReason: noProgress, failWithin: timeout},
		{name: "100% loss 2s", egress: true, target: (*chaosRun).busySwitch,
			inject: egress(2*time.Second, map[string]any{"loss": 1})},
		{name: "dup+reorder 10% 5s", egress: true, target: (*chaosRun).busySwitch,
			inject: egress(5*time.Second, map[string]any{"dup": 0.1, "reorder": 0.1})},
		{name: "corruption 1% 5s", egress: true, target: (*chaosRun).busySwitch,
			inject: egress(5*time.Second, map[string]any{"corrupt": 0.01})},
		{name: "switch SIGSTOP 1s", target: (*chaosRun).busySwitch, inject: freeze(time.Second)},
		{name: "switch SIGSTOP 10s", target: (*chaosRun).busySwitch, inject: freeze(10 * time.Second),
			failReason: noProgress, failWithin: timeout},
	}
}

// fault is one injection.
type fault struct {
	kind       *faultKind
	target     string
	start, end time.Time
	hit        []int // jobs using the target while the fault lasted (queued ones too, for a service)
	// itersAtEnd are the iterations of the jobs hit that ran when the fault was undone; watched
	// once it is filled.
	itersAtEnd map[int]int
	watched    bool
	// recovery is from the fault's end until each of those jobs progressed again or ended.
	recovery  time.Duration
	recovered bool
	err       error
}

// hits reports whether the fault, aimed at its target, touches job j.
func (r *chaosRun) hits(k *faultKind, target string, j scheduler.Job) bool {
	switch k.name {
	case "controller kill+restart", "scheduler kill+restart":
		// Also the queued: one may be placed the moment before, or while, the service is down.
		return !j.State.Final()
	}
	if j.State != scheduler.Running && j.State != scheduler.Starting {
		return false
	}
	p := j.Placement
	switch k.name {
	case "PS killed", "worker killed":
		return fmt.Sprint(j.ID) == target
	case "host link down 1s", "host link down 30s":
		if p == nil || p.SwitchJob == 0 {
			return false
		}
		return p.PS == target || slices.ContainsFunc(p.Workers, func(w scheduler.PlacedWorker) bool { return w.Host == target && !w.Local })
	}
	return slices.Contains(r.pathSwitches(j), target)
}

// pathSwitches are the switches a job's packets cross: the ToRs of its remote workers and its PS,
// and the switches between racks when there are several.
func (r *chaosRun) pathSwitches(j scheduler.Job) []string {
	p := j.Placement
	if p == nil || p.SwitchJob == 0 {
		return nil
	}
	var out []string
	add := func(host string) {
		if t := r.tor[host]; t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	add(p.PS)
	for _, w := range p.Workers {
		if !w.Local {
			add(w.Host)
		}
	}
	if len(out) > 1 {
		for _, sw := range r.switches {
			if !r.isToR[sw] {
				out = append(out, sw)
			}
		}
	}
	return out
}

// running are the jobs running now, by id.
func (r *chaosRun) running() []scheduler.Job {
	var out []scheduler.Job
	for _, id := range r.order {
		if j := r.jobs[id]; j.State == scheduler.Running && j.Progress.Iterations > 0 {
			out = append(out, j)
		}
	}
	return out
}

func (r *chaosRun) busySwitch() string {
	var cands []string
	for _, j := range r.running() {
		for _, sw := range r.pathSwitches(j) {
			if !slices.Contains(cands, sw) {
				cands = append(cands, sw)
			}
		}
	}
	return r.pick(cands)
}

func (r *chaosRun) busyHost() string {
	var cands []string
	for _, j := range r.running() {
		if j.Placement.SwitchJob == 0 {
			continue
		}
		for _, w := range j.Placement.Workers {
			if !w.Local && !slices.Contains(cands, w.Host) {
				cands = append(cands, w.Host)
			}
		}
		if !slices.Contains(cands, j.Placement.PS) {
			cands = append(cands, j.Placement.PS)
		}
	}
	return r.pick(cands)
}

func (r *chaosRun) busyJob() string {
	var cands []string
	for _, j := range r.running() {
		cands = append(cands, fmt.Sprint(j.ID))
	}
	return r.pick(cands)
}

func (r *chaosRun) pick(cands []string) string {
	if len(cands) == 0 {
		return ""
	}
	slices.Sort(cands)
	return cands[r.rng.IntN(len(cands))]
}

// killAgent kills a job's PS, or one of its workers, with SIGKILL (a crash: no summary, no
// counters).
func (r *chaosRun) killAgent(job, role string) error {
	var id int
	fmt.Sscan(job, &id)
	j := r.jobs[id]
	var cands []scheduler.Proc
	for _, p := range j.Procs {
		if p.Role == role {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return fmt.Errorf("job %d has no %s process", id, role)
	}
	p := cands[r.rng.IntN(len(cands))]
	if t, err := procs.StartTicks(p.PID); err != nil || t != p.StartTicks {
		return fmt.Errorf("%s of job %d (pid %d) has already ended", role, id, p.PID)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s of job %d (pid %d): %w", role, id, p.PID, err)
	}
	return nil
}
