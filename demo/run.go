package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/internal/agentlog"
	"github.com/inapack/inapack/internal/procs"
)

func (d *demo) startController(ctx context.Context) error {
	p, err := d.listeningController(ctx)
	if err != nil {
		return err
	}
	// Ready when the pipeline is pushed, the config reconciled and counters read once.
	c := api.NewClient(d.apiAddr, "")
	for {
		sts, err := c.Status(ctx)
		if err == nil && len(sts) == 1 && sts[0].Connected && sts[0].PipelinePushes > 0 && sts[0].Reconciles > 0 && sts[0].Snapshot != nil {
			fmt.Printf("demo: controller ready: metrics http://%s/metrics, job API %s (%s status --api %s)\n",
				d.metricsAddr, d.apiAddr, filepath.Join(d.bin, "inactl"), d.apiAddr)
			return nil
		}
		select {
		case <-ctx.Done():
			last := ""
			if len(sts) == 1 {
				last = sts[0].LastError
			}
			return fmt.Errorf("the controller did not get the switch ready (%v %s)\n%s", ctx.Err(), last, p.Tail(10))
		case <-p.Done():
			return p.Exited()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bindAttempts bounds listeningController's tries.
const bindAttempts = 3

// listeningController starts inactl and waits for its job API. A port procs.FreeAddr found free
// can be taken before inactl binds it (once in about 20 back-to-back demos here), a race no probe
// closes: then inactl exits with "address already in use", and it is started again on new ports.
func (d *demo) listeningController(ctx context.Context) (*procs.Proc, error) {
	path := filepath.Join(d.dir, "inactl.yaml")
	for attempt := 1; ; attempt++ {
		if err := os.WriteFile(path, []byte(controllerConfig(d)), 0o644); err != nil {
			return nil, err
		}
		p, err := d.procs.start("inactl", nil, filepath.Join(d.bin, "inactl"), "run", "--config", path)
		if err != nil {
			return nil, err
		}
		err = procs.WaitTCP(ctx, d.apiAddr, p)
		if err == nil || attempt == bindAttempts || !strings.Contains(err.Error(), "address already in use") {
			return p, err
		}
		fmt.Printf("demo: a port of the controller (%s, %s) was taken before it bound it; new ports\n", d.apiAddr, d.metricsAddr)
		for _, a := range []*string{&d.apiAddr, &d.metricsAddr} {
			if *a, err = procs.FreeAddr(); err != nil {
				return nil, err
			}
		}
	}
}

// progressEvery is how often a progress line is printed while the jobs run.
const progressEvery = 2 * time.Second

// snapshotWait bounds the wait for a counter snapshot read after some moment. A fresh status reads
// the switch at once; the margin is for a switch too busy to answer, whose read is then retried.
const snapshotWait = 20 * time.Second

// workerResult is the parsed worker-summary line of one worker.
type workerResult struct {
	fields map[string]string
	errMsg string // the worker-error line
	iter   int    // iterations reported so far
}

func (d *demo) runJobs(ctx context.Context) error {
	psArgs := []string{"ip", "netns", "exec", d.ps.name, filepath.Join(d.bin, "ina-ps"), "-iface", "eth0", "-ip", psIP,
		"-integrity=" + fmt.Sprint(d.integrity), "-threads", fmt.Sprint(d.threads)}
	for _, j := range d.jobs {
		psArgs = append(psArgs, "-job", fmt.Sprintf("%d:%d:%d", j.id, j.workers, j.window))
	}
	var mu sync.Mutex
	psLines := map[int]map[string]string{}
	psReady := make(chan struct{})
	var psReadyOnce sync.Once
	psProc, err := d.procs.start("ps", func(line string) {
		if strings.HasPrefix(line, "ina-ps: serving") { // logged once its socket is open
			psReadyOnce.Do(func() { close(psReady) })
		}
		if strings.HasPrefix(line, "ps: job=") {
			m := agentlog.Fields(line)
			id, _ := strconv.Atoi(m["job"])
			mu.Lock()
			psLines[id] = m
			mu.Unlock()
		}
	}, psArgs...)
	if err != nil {
		return err
	}
	select { // the first data packets would be lost if the PS's socket were not open yet
	case <-psReady:
	case <-psProc.Done():
		return fmt.Errorf("ina-ps exited: %v\n%s", psProc.Err(), psProc.Tail(10))
	case <-ctx.Done():
		return fmt.Errorf("ina-ps did not start serving: %v", ctx.Err())
	}
	results := map[int][]*workerResult{}
	var workers []*procs.Proc
	start := time.Now()
	for _, j := range d.jobs {
		for r, h := range j.hosts {
			wr := &workerResult{}
			results[j.id] = append(results[j.id], wr)
			victim := j.id == d.killJob && r == j.workers-1
			// The killed job's peers must give up soon after their peer dies; every other worker
			// gets a timeout that no scheduling delay on a busy machine reaches.
			progress := 30 * time.Second
			if j.id == d.killJob {
				progress = 3 * time.Second
			}
			killNow := make(chan struct{})
			var once sync.Once
			argv := d.workerArgv(j, r, h, progress)
			p, err := d.procs.start(fmt.Sprintf("worker-j%d-r%d", j.id, r), func(line string) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case strings.HasPrefix(line, "worker: "):
					wr.iter++
					if victim && wr.iter >= d.killAfter {
						once.Do(func() { close(killNow) })
					}
				case strings.HasPrefix(line, "worker-summary: "):
					wr.fields = agentlog.Fields(line)
				case strings.HasPrefix(line, "worker-error: "):
					wr.errMsg = line
				}
			}, argv...)
			if err != nil {
				return err
			}
			workers = append(workers, p)
			if victim {
				if d.killAfter == 0 {
					once.Do(func() { close(killNow) })
				}
				go func() {
					select {
					case <-killNow:
						fmt.Printf("demo: killing job %d rank %d after %d iterations\n", j.id, r, d.killAfter)
						p.Stop(0)
					case <-p.Done():
					}
				}()
			}
		}
	}
	c := api.NewClient(d.apiAddr, "")
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for _, p := range workers {
	wait:
		for {
			select {
			case <-p.Done():
				break wait
			case <-ctx.Done():
				return fmt.Errorf("interrupted or timed out while the jobs ran: %v", ctx.Err())
			case <-tick.C:
				mu.Lock()
				line := fmt.Sprintf("progress: %4.1fs", time.Since(start).Seconds())
				for _, j := range d.jobs {
					done := 0
					for _, wr := range results[j.id] {
						done += wr.iter
					}
					if d.exec[j.id] != "" {
						line += fmt.Sprintf(" | job %d: %d iterations", j.id, done/j.workers)
					} else {
						line += fmt.Sprintf(" | job %d: %d/%d iterations", j.id, done/j.workers, d.iters)
					}
				}
				mu.Unlock()
				// The switch's counters as last polled, when that was since the previous line.
				if snap := d.snapshot(ctx, c.Status); snap != nil && time.Since(snap.Time) < progressEvery {
					ev := snap.Events
					line += fmt.Sprintf(" | switch: completed=%d collision=%d preempted=%d", ev["completed"], ev["collision"], ev["preempted"])
				}
				fmt.Println(line)
			}
		}
	}
	finished := time.Now()
	elapsed := finished.Sub(start)
	// A snapshot read after the last packet, so the counters are final.
	var snap *cp.Snapshot
	for deadline := time.Now().Add(snapshotWait); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if snap = d.snapshot(ctx, c.FreshStatus); snap != nil && snap.Time.After(finished) {
			break
		}
	}
	removal := ""
	if d.killJob != 0 {
		if removal, err = d.removeKilled(ctx, c, snap); err != nil {
			return err
		}
	}
	psProc.Stop(3 * time.Second)
	return d.summary(results, psLines, snap, elapsed, removal)
}

// removeKilled removes the killed job through the controller (its entries and the slots it holds)
// and checks in a later counter snapshot that no slot is held by it any more.
func (d *demo) removeKilled(ctx context.Context, c *api.Client, snap *cp.Snapshot) (string, error) {
	before := -1
	if snap != nil && snap.SlotsErr == "" {
		before = snap.SlotsHeld[d.killJob] // an empty map is omitted from the JSON: nil means none
	}
	if err := c.RemoveJob(ctx, d.killJob); err != nil {
		return "", fmt.Errorf("controller: remove job %d: %w", d.killJob, err)
	}
	removed := time.Now()
	for deadline := removed.Add(snapshotWait); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s := d.snapshot(ctx, c.FreshStatus)
		if s != nil && s.Time.After(removed) {
			if s.SlotsErr != "" {
				return "", fmt.Errorf("the controller cannot read slot registers: %s", s.SlotsErr)
			}
			if n := s.SlotsHeld[d.killJob]; n != 0 {
				return "", fmt.Errorf("job %d removed but still holds %d slot(s)", d.killJob, n)
			}
			return fmt.Sprintf("removed=yes slots_held_before=%d slots_held_after=0", before), nil
		}
	}
	return "", fmt.Errorf("no counter snapshot after removing job %d", d.killJob)
}

// snapshot is the switch's counters from status (the client's Status or FreshStatus), nil if the
// controller could not be asked. The timeout leaves room for a fresh read on BMv2, whose slot
// registers are read through simple_switch_CLI.
func (d *demo) snapshot(ctx context.Context, status func(context.Context) ([]cp.SwitchStatus, error)) *cp.Snapshot {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sts, err := status(cctx)
	if err != nil || len(sts) != 1 {
		return nil
	}
	return sts[0].Snapshot
}

// summary prints one machine-checkable line per job and the verdict.
func (d *demo) summary(results map[int][]*workerResult, psLines map[int]map[string]string, snap *cp.Snapshot, elapsed time.Duration, removal string) error {
	var problems []string
	if snap == nil {
		problems = append(problems, "no counter snapshot from the controller")
		snap = &cp.Snapshot{}
	}
	fmt.Printf("demo-summary: switch=%s jobs=%d elapsed_s=%.1f\n", d.target, len(d.jobs), elapsed.Seconds())
	ids := make([]int, 0, len(d.jobs))
	byID := map[int]*jobSpec{}
	for _, j := range d.jobs {
		ids = append(ids, j.id)
		byID[j.id] = j
	}
	sort.Ints(ids)
	for _, id := range ids {
		j := byID[id]
		exact, iters, total, corrupt, ignored := 0, 0, 0, 0, 0
		var gp float64
		status := "ok"
		if id == d.killJob {
			// Every survivor must fail with the no-progress error; whatever completed was exact.
			status = "failed_as_expected"
			for r, wr := range results[id][:j.workers-1] {
				if wr.fields == nil || wr.fields["status"] != "error" || !strings.Contains(wr.errMsg, "made no progress") {
					status = "error"
					problems = append(problems, fmt.Sprintf("job %d rank %d did not fail with a no-progress timeout after its peer died: %q", id, r, wr.errMsg))
				}
				if wr.fields != nil && wr.fields["wrong"] != "0" {
					status = "error"
					problems = append(problems, fmt.Sprintf("job %d rank %d: %s wrong results before the failure", id, r, wr.fields["wrong"]))
				}
			}
			fmt.Printf("demo-job: job=%d priority=%d workers=%d killed_rank=%d killed_after=%d %s status=%s\n",
				id, j.priority, j.workers, j.workers-1, d.killAfter, removal, status)
			continue
		}
		for r, wr := range results[id] {
			f := wr.fields
			if f == nil {
				status = "error"
				problems = append(problems, fmt.Sprintf("job %d rank %d printed no summary", id, r))
				continue
			}
			e, _ := strconv.Atoi(f["exact"])
			it, _ := strconv.Atoi(f["iterations"])
			g, _ := strconv.ParseFloat(f["goodput_mbps"], 64)
			c, _ := strconv.Atoi(f["corrupt"])
			corrupt += c
			ig, _ := strconv.Atoi(f["ignored_results"])
			ignored += ig
			exact += e
			iters += it
			gp += g
			want := d.iters
			if d.exec[id] != "" {
				want = it // an -exec command decides how many iterations it runs
			}
			if f["status"] != "ok" || e != want {
				status = "error"
				problems = append(problems, fmt.Sprintf("job %d rank %d: status=%s exact=%d/%d", id, r, f["status"], e, want))
			}
			total += want
		}
		planned := d.iters
		if d.exec[id] != "" {
			planned = iters / max(1, j.workers)
		}
		ev := snap.JobEvents[id]
		psRes, psCorrupt, psUnicast := "0", "0", "0"
		if m := psLines[id]; m != nil && m["results"] != "" {
			psRes = m["results"]
		}
		if m := psLines[id]; m != nil && m["resend_unicast"] != "" {
			psUnicast = m["resend_unicast"]
		}
		if m := psLines[id]; m != nil {
			// Caught at the PS: sums that failed (CORRUPT results) and exact-path copies dropped.
			a, _ := strconv.Atoi(m["corrupt"])
			b, _ := strconv.Atoi(m["corrupt_results"])
			psCorrupt = strconv.Itoa(a + b)
		}
		ina := "on"
		if !j.ina {
			ina = "off"
		}
		fmt.Printf("demo-job: job=%d priority=%d workers=%d ina=%s iterations=%d/%d exact=%d/%d goodput_mbps=%.3f switch_completed=%d switch_collision=%d switch_preempted=%d switch_evicted=%d switch_stale=%d switch_flushed=%d switch_bypass=%d ps_results=%s ps_resend_unicast=%s ps_corrupt=%s worker_corrupt=%d worker_ignored=%d status=%s\n",
			id, j.priority, j.workers, ina, iters/max(1, j.workers), planned, exact, total, gp/float64(max(1, j.workers)),
			ev["completed"], ev["collision"], ev["preempted"], ev["evicted"], ev["stale"], ev["flushed"], ev["bypass"], psRes,
			psUnicast, psCorrupt, corrupt, ignored, status)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	fmt.Println("demo: OK")
	return nil
}
