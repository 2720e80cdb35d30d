package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inapack/inapack/scheduler"
)

// leak is something still held once every job has ended; job is the job that held it (0: not
// known).
type leak struct {
	what string
	job  int
}

// leaks checks, once every job has ended, that all they held is free: the controller's job
// entries and the switches' slots, the scheduler's GPUs, the agents' processes and links.
// The controller and the scheduler get a few seconds to finish what they do asynchronously.
func (r *chaosRun) leaks(ctx context.Context) []leak {
	bySwitchJob := map[int]int{} // switch job id -> the last job of ours that had it
	for _, id := range r.order {
		if p := r.jobs[id].Placement; p != nil && p.SwitchJob != 0 {
			bySwitchJob[p.SwitchJob] = id
		}
	}
	var out []leak
	r.waitUntil(ctx, 20*time.Second, func() bool {
		out = out[:0]
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ctlJobs, err := r.ctl.Jobs(cctx)
		if err != nil {
			out = append(out, leak{what: "controller: " + err.Error()})
		}
		for _, j := range ctlJobs {
			out = append(out, leak{what: fmt.Sprintf("controller: job entries of switch job %d", j.ID), job: bySwitchJob[j.ID]})
		}
		sts, err := r.ctl.FreshStatus(cctx) // the slots now, not as last polled
		if err != nil {
			out = append(out, leak{what: "controller status: " + err.Error()})
		}
		for _, st := range sts {
			if st.Snapshot == nil {
				out = append(out, leak{what: fmt.Sprintf("switch %s: no slot reading", st.Name)})
				continue
			}
			if st.Snapshot.SlotsErr != "" {
				out = append(out, leak{what: fmt.Sprintf("switch %s: slots: %s", st.Name, st.Snapshot.SlotsErr)})
			}
			for job, n := range st.Snapshot.SlotsHeld {
				if n > 0 {
					out = append(out, leak{what: fmt.Sprintf("switch %s: %d slots held by switch job %d", st.Name, n, job), job: bySwitchJob[job]})
				}
			}
		}
		ci, err := r.c.Cluster(cctx)
		if err != nil {
			out = append(out, leak{what: "scheduler: " + err.Error()})
		}
		for _, m := range ci.Machines {
			if m.FreeGPUs != m.GPUs {
				out = append(out, leak{what: fmt.Sprintf("scheduler: %s has %d of %d GPUs free", m.Host, m.FreeGPUs, m.GPUs)})
			}
		}
		for _, x := range r.cl.Leftovers() {
			l := leak{what: x}
			for _, id := range r.order {
				for _, p := range r.jobs[id].Procs {
					if strings.Contains(x, fmt.Sprintf("process %d ", p.PID)) {
						l.job = id
					}
				}
				if strings.HasSuffix(x, fmt.Sprintf("interface inal%dp", id)) || strings.HasSuffix(x, fmt.Sprintf("interface inal%dw", id)) {
					l.job = id
				}
			}
			out = append(out, l)
		}
		return len(out) == 0
	})
	return out
}

// kindRow is one line of the table.
type kindRow struct {
	injected, hit, exact, failed, broken, wrong, leaked int
	recovery                                            []float64
}

// report prints the table and the verdict; it returns whether every promise held.
func (r *chaosRun) report(out io.Writer, leaks []leak, runErr error, took time.Duration) bool {
	rows := map[string]*kindRow{}
	row := func(name string) *kindRow {
		if rows[name] == nil {
			rows[name] = &kindRow{}
		}
		return rows[name]
	}
	hitJobs := map[string]map[int]bool{}
	for _, f := range r.faults {
		k := row(f.kind.name)
		k.injected++
		if hitJobs[f.kind.name] == nil {
			hitJobs[f.kind.name] = map[int]bool{}
		}
		for _, id := range f.hit {
			hitJobs[f.kind.name][id] = true
		}
		k.hit = len(hitJobs[f.kind.name])
		if f.recovered && len(f.itersAtEnd) > 0 {
			k.recovery = append(k.recovery, f.recovery.Seconds())
		}
	}
	var broken []string
	exact, failed, wrong := 0, 0, 0
	for _, id := range r.order {
		j := r.jobs[id]
		hits := r.hitBy[id]
		names := []string{"none"}
		if len(hits) > 0 {
			names = nil
			for _, f := range hits {
				if !slices.Contains(names, f.kind.name) {
					names = append(names, f.kind.name)
				}
			}
		}
		want := j.Iterations * max(1, len(placementWorkers(j)))
		outcome := ""
		switch {
		case j.Progress.Wrong > 0:
			wrong += j.Progress.Wrong
			outcome = fmt.Sprintf("%d wrong all-reduces", j.Progress.Wrong)
			for _, n := range names {
				row(n).wrong += j.Progress.Wrong
			}
		case j.State == scheduler.Completed && j.Progress.Exact == want:
			exact++
			for _, n := range names {
				row(n).exact++
			}
			continue
		case j.State == scheduler.Completed:
			outcome = fmt.Sprintf("completed with %d of %d exact all-reduces", j.Progress.Exact, want)
		case j.State == scheduler.Failed:
			if f := promisedFailure(j, hits, r.T); f != nil {
				failed++
				row(f.kind.name).failed++
				continue
			}
			outcome = fmt.Sprintf("failed: %s", j.Reason)
		default:
			outcome = string(j.State)
		}
		for _, n := range names {
			row(n).broken++
		}
		broken = append(broken, fmt.Sprintf("job %d (%s; hit by %s): %s", id, j.Name, strings.Join(names, ", "), outcome))
	}
	for _, l := range leaks {
		name := "-"
		if hits := r.hitBy[l.job]; l.job != 0 && len(hits) > 0 {
			name = hits[len(hits)-1].kind.name
		} else if l.job != 0 {
			name = "none"
		}
		row(name).leaked++
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\tjobs hit\texact\tfailed as promised\tbroken\twrong sums\tleaks\trecovery p50 s\tp99 s\t")
	var names []string
	for _, k := range r.kinds {
		names = append(names, k.name)
	}
	names = append(names, "none", "-")
	for _, n := range names {
		k := rows[n]
		if k == nil {
			continue
		}
		label := n
		if n == "none" {
			label = "(jobs no fault hit)"
		} else if n == "-" {
			label = "(not attributable)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", label, k.injected, k.hit, k.exact, k.failed, k.broken, k.wrong,
			k.leaked, quantileText(k.recovery, 0.5), quantileText(k.recovery, 0.99))
	}
	tw.Flush()
	for _, b := range broken {
		fmt.Fprintf(out, "chaos: broken promise: %s\n", b)
	}
	for _, l := range leaks {
		fmt.Fprintf(out, "chaos: leaked: %s\n", l.what)
	}
	for _, f := range r.faults {
		if !f.recovered && len(f.itersAtEnd) > 0 {
			fmt.Fprintf(out, "chaos: not recovered: %s on %s at t=%.0fs (jobs %v)\n", f.kind.name, f.target, f.start.Sub(r.t0).Seconds(), f.hit)
		}
	}
	fmt.Fprintf(out, "chaos: %d faults in %s\n", len(r.faults), took.Round(time.Second))
	verdict := fmt.Sprintf("faults=%d jobs=%d exact=%d failed_as_promised=%d wrong_sums=%d leaked=%d", len(r.faults), len(r.order),
		exact, failed, wrong, len(leaks))
	var problems []string
	if runErr != nil {
		problems = append(problems, runErr.Error())
	}
	if len(broken) > 0 {
		problems = append(problems, fmt.Sprintf("%d jobs ended against the promise", len(broken)))
	}
	if len(r.faults) < r.nFaults {
		problems = append(problems, fmt.Sprintf("%d of %d faults injected", len(r.faults), r.nFaults))
	}
	if wrong == 0 && len(leaks) == 0 && len(problems) == 0 && exact+failed == len(r.order) {
		fmt.Fprintf(out, "chaos: OK %s\n", verdict)
		return true
	}
	fmt.Fprintf(out, "chaos: FAIL %s: %s\n", verdict, strings.Join(append(problems, "see above"), "; "))
	return false
}

// promisedFailure is the fault, among those that hit j, whose promise allows j's failure: its
// reason, and its time after the fault's start (or the job's, for a job started during the fault).
func promisedFailure(j scheduler.Job, hits []*fault, T time.Duration) *fault {
	if j.Finished == nil {
		return nil
	}
	for _, f := range hits {
		k := f.kind
		if k.failReason == nil || !k.failReason.MatchString(j.Reason) {
			continue
		}
		from := f.start
		if j.Started != nil && j.Started.After(from) {
			from = *j.Started
		}
		if at := j.Finished.Sub(from); at >= 0 && at <= k.failWithin(T) {
			return f
		}
	}
	return nil
}

func placementWorkers(j scheduler.Job) []scheduler.PlacedWorker {
	if j.Placement == nil {
		return nil
	}
	return j.Placement.Workers
}

// quantileText is the q-quantile of xs (nearest rank), "-" without samples.
func quantileText(xs []float64, q float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return fmt.Sprintf("%.1f", s[max(0, min(i, len(s)-1))])
}
