package scheduler

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// launch installs a placed job's entries and starts its agents; any failure fails the job and
// frees what it took.
func (s *Service) launch(id int) {
	s.mu.Lock()
	j := s.byID[id]
	if j.State != Starting {
		s.mu.Unlock()
		return
	}
	jc := *j
	p := *j.Placement
	s.mu.Unlock()
	jc.Placement = &p
	if err := s.startAgents(&jc); err != nil {
		s.log.Warn("job failed to start", "job", id, "err", err)
		s.mu.Lock()
		delete(s.cancelling, id)
		s.mu.Unlock()
		s.teardown(id, Failed, "start: "+err.Error())
		return
	}
	s.mu.Lock()
	cancelled := s.cancelling[id]
	delete(s.cancelling, id)
	if j.State == Starting {
		j.State = Running
		s.logSaveErr(s.saveLocked())
	}
	s.mu.Unlock()
	if cancelled {
		s.teardown(id, Cancelled, "cancelled by request")
		return
	}
	s.log.Info("job running", "job", id)
}

// wireJob is the job id the agents put in their packets: the switch job id, or any id for a job
// that never leaves its host.
func wireJob(p *Placement) int { return max(p.SwitchJob, 1) }

func (s *Service) startAgents(j *Job) error {
	p := j.Placement
	ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
	defer cancel()
	if p.SwitchJob != 0 {
		jc, err := s.jobConfig(j)
		if err != nil {
			return err
		}
		if err := s.addJob(ctx, jc); err != nil {
			return fmt.Errorf("installing the job on the switches: %w", err)
		}
	}
	local := p.Workers[len(p.Workers)-1].Local
	if local {
		if err := s.addLocalLink(j); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.cfg.StateDir, "logs")
	ps, err := s.procs.start(s.cfg.Hosts[p.PS], "ps", 0, p.PS, filepath.Join(dir, fmt.Sprintf("job%d-ps.log", j.ID)),
		s.psArgv(j, wireJob(p), local)...)
	if err != nil {
		return err
	}
	s.addProc(j.ID, ps)
	if err := s.waitReady(ctx, &ps); err != nil {
		return err
	}
	for _, w := range p.Workers {
		wp, err := s.procs.start(s.cfg.Hosts[w.Host], "worker", w.Rank, w.Host,
			filepath.Join(dir, fmt.Sprintf("job%d-rank%d.log", j.ID, w.Rank)), s.workerArgv(j, w, wireJob(p))...)
		if err != nil {
			return err
		}
		s.addProc(j.ID, wp)
	}
	return nil
}

// addProc records a started agent at once, so that a failure later in the start (or a restart of
// the scheduler) still finds it to stop.
func (s *Service) addProc(id int, p Proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.byID[id]
	j.Procs = append(j.Procs, p)
	s.logs[id] = append(s.logs[id], &agentLog{})
	s.logSaveErr(s.saveLocked())
}

// waitReady waits for the PS to open its sockets: workers started earlier would lose their first
// packets.
func (s *Service) waitReady(ctx context.Context, p *Proc) error {
	var a agentLog
	for {
		readLog(p, &a)
		if a.ready {
			return nil
		}
		if ok, how := s.procs.alive(p); !ok {
			readLog(p, &a)
			return fmt.Errorf("the parameter server on %s exited (%s): %s", p.Host, how, a.errLine)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the parameter server on %s did not start serving: %w", p.Host, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// addLocalLink makes the private veth pair between the PS and the worker on its host.
func (s *Service) addLocalLink(j *Job) error {
	return s.cfg.Hosts[j.Placement.PS].AddLocalLink(LocalLink(j.ID))
}

// readLog feeds a's parser with what p's log gained since the last read.
func readLog(p *Proc, a *agentLog) {
	f, err := os.Open(p.Log)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return
	}
	b, _ := io.ReadAll(io.LimitReader(f, 4<<20))
	a.feed(b)
}

// follow reads every running job's agent logs, updates its progress and ends it when its workers
// are done or one of its agents failed.
func (s *Service) follow() {
	type end struct {
		id     int
		state  State
		reason string
		at     time.Time
	}
	var ends []end
	s.mu.Lock()
	for _, j := range s.jobs {
		if j.State != Running {
			continue
		}
		st, reason, at := s.observeLocked(j)
		if st != "" {
			ends = append(ends, end{j.ID, st, reason, at})
		}
	}
	s.mu.Unlock()
	for _, e := range ends {
		s.teardownAt(e.id, e.state, e.reason, e.at)
	}
}

// observeLocked updates j's progress from its agents and returns a final state if it has one, and
// when it was reached: for a completed job the moment its last worker wrote its summary (a log
// file's modification time), else now.
func (s *Service) observeLocked(j *Job) (State, string, time.Time) {
	logs := s.logs[j.ID]
	var iters, exact, wrong, done, workers, sent, resent, corrupt int
	var mbps float64
	var failure string
	psDown := ""
	for i := range j.Procs {
		p, a := &j.Procs[i], logs[i]
		readLog(p, a)
		alive, how := s.procs.alive(p)
		if !alive {
			readLog(p, a) // what it printed before it ended
		}
		if p.Role == "ps" {
			corrupt += a.corrupt
			if !alive {
				psDown = fmt.Sprintf("the parameter server on %s exited (%s)%s", p.Host, how, suffix(a.errLine))
			}
			continue
		}
		workers++
		exact += a.exact
		wrong += a.wrong
		if workers == 1 || a.iters < iters {
			iters = a.iters
		}
		switch {
		case a.summary != nil:
			if err := a.verdict(j.Iterations); err != nil && failure == "" {
				failure = fmt.Sprintf("%s failed: %v", p.label(), err)
			}
			mbps += atof(a.summary["goodput_mbps"])
			sent += int(atof(a.summary["sent"]))
			resent += int(atof(a.summary["resent"]))
			corrupt += int(atof(a.summary["corrupt"]))
			done++
		case !alive:
			if failure == "" {
				failure = fmt.Sprintf("%s died (%s) after %d of %d iterations", p.label(), how, a.iters, j.Iterations)
			}
		default:
			mbps += a.lastMbps
		}
	}
	if workers > 0 {
		j.Progress = Progress{Iterations: iters, ThroughputMbps: mbps / float64(workers), Exact: exact, Wrong: wrong,
			Sent: sent, Resent: resent, Corrupt: corrupt}
	}
	now := time.Now()
	switch {
	case failure != "":
		return Failed, failure, now
	case workers > 0 && done == workers:
		var last time.Time
		for _, p := range j.Procs {
			if fi, err := os.Stat(p.Log); err == nil && p.Role == "worker" && fi.ModTime().After(last) {
				last = fi.ModTime()
			}
		}
		if last.IsZero() || last.After(now) {
			last = now
		}
		var first time.Time
		for i := range j.Procs {
			if t := j.Procs[i].started(); j.Procs[i].Role == "worker" && !t.IsZero() && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
		if !first.IsZero() && first.Before(last) {
			j.RunSec = last.Sub(first).Seconds()
		}
		return Completed, "", last
	case psDown != "":
		return Failed, psDown, now
	}
	return "", "", now
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func atof(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// teardown stops a job's agents, removes its entries and slots from the switches, frees its GPUs
// and records how it ended, now.
func (s *Service) teardown(id int, st State, reason string) { s.teardownAt(id, st, reason, time.Now()) }

// teardownAt is teardown for a job whose end was seen at the time given: its JCT ends there, not
// after its teardown.
func (s *Service) teardownAt(id int, st State, reason string, at time.Time) {
	s.mu.Lock()
	j := s.byID[id]
	if j.State.Final() || j.State == stopping {
		s.mu.Unlock()
		return
	}
	j.State = stopping
	procs := append([]Proc(nil), j.Procs...)
	var p Placement
	if j.Placement != nil {
		p = *j.Placement
	}
	s.mu.Unlock()

	// Workers first, so none is left sending into a PS that is gone; the PS prints its counters
	// on SIGTERM.
	for i := range procs {
		if procs[i].Role == "worker" {
			s.procs.stop(&procs[i], 2*time.Second)
		}
	}
	for i := range procs {
		if procs[i].Role == "ps" {
			s.procs.stop(&procs[i], 2*time.Second)
		}
	}
	var problems []string
	if len(p.Workers) > 0 && p.Workers[len(p.Workers)-1].Local {
		lp, _ := LocalLink(j.ID)
		if err := s.cfg.Hosts[p.PS].DelLocalLink(lp); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if p.SwitchJob != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := s.removeJob(ctx, p.SwitchJob)
		cancel()
		if err != nil {
			problems = append(problems, "removing its switch entries: "+err.Error())
		}
	}
	if len(problems) > 0 {
		s.log.Error("job teardown incomplete", "job", id, "problems", problems)
		reason = strings.TrimPrefix(reason+"; teardown: "+strings.Join(problems, "; "), "; ")
	}
	s.mu.Lock()
	s.endLocked(j, st, reason, at)
	jct := j.JCTSec
	s.mu.Unlock()
	s.log.Info("job ended", "job", id, "state", st, "reason", reason, "jct_s", fmt.Sprintf("%.2f", jct))
	s.poke()
}

// stopping marks a job whose teardown is under way (never saved: a restart finds it running).
const stopping State = "stopping"

// endLocked records a final state, reached at the time given, and frees the job's GPUs.
func (s *Service) endLocked(j *Job, st State, reason string, at time.Time) {
	j.State, j.Reason, j.Finished = st, reason, &at
	j.JCTSec = at.Sub(j.Submitted).Seconds()
	if j.Placement != nil {
		s.eng.finish(jobKey(j.ID))
	}
	delete(s.logs, j.ID)
	s.logSaveErr(s.saveLocked())
}
