package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/inapack/inapack/netpack"
)

// stateFile is what StateDir/state.json holds.
type stateFile struct {
	Policy string `json:"policy"`
	NextID int    `json:"next_id"`
	// LastSwitchJob is the switch job id given last (ids go round, see switchIDLocked).
	LastSwitchJob int   `json:"last_switch_job,omitempty"`
	Jobs          []Job `json:"jobs"`
}

func (s *Service) statePath() string { return filepath.Join(s.cfg.StateDir, "state.json") }

// saveLocked writes the state atomically (a temporary file renamed over the old one).
func (s *Service) saveLocked() error {
	f := stateFile{Policy: s.cfg.Policy, NextID: s.nextID, LastSwitchJob: s.lastSwitchJob, Jobs: make([]Job, len(s.jobs))}
	for i, j := range s.jobs {
		f.Jobs[i] = *j
		if j.State == stopping {
			f.Jobs[i].State = Running // its teardown is redone after a restart
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.statePath())
}

// restore loads the state: queued jobs wait again; running jobs are re-attached (their agents
// kept running); jobs caught half-started are failed and cleaned up, since which of their agents
// started is not known for sure.
func (s *Service) restore() error {
	b, err := os.ReadFile(s.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("scheduler state %s: %w", s.statePath(), err)
	}
	if f.Policy != s.cfg.Policy {
		s.log.Warn("the state was written under another policy; running jobs keep their placement",
			"was", f.Policy, "now", s.cfg.Policy)
	}
	s.nextID = max(f.NextID, 1)
	s.lastSwitchJob = f.LastSwitchJob
	var halfStarted []int
	for i := range f.Jobs {
		j := &f.Jobs[i]
		s.jobs = append(s.jobs, j)
		s.byID[j.ID] = j
		s.nextID = max(s.nextID, j.ID+1)
		if j.State != Running && j.State != Starting {
			continue
		}
		p, err := s.netpackPlacement(j)
		if err == nil {
			err = s.eng.start(p)
		}
		if err != nil {
			return fmt.Errorf("scheduler state: job %d: %w", j.ID, err)
		}
		s.logs[j.ID] = make([]*agentLog, len(j.Procs))
		for k := range j.Procs {
			s.logs[j.ID][k] = &agentLog{}
		}
		if j.State == Starting {
			halfStarted = append(halfStarted, j.ID)
		}
	}
	for _, id := range halfStarted {
		s.byID[id].State = Running // so that teardown runs
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.teardown(id, Failed, "the scheduler stopped while starting the job") }()
	}
	s.log.Info("scheduler state restored", "jobs", len(s.jobs), "next_id", s.nextID)
	return nil
}

// netpackPlacement rebuilds the engine's view of a placed job.
func (s *Service) netpackPlacement(j *Job) (netpack.Placement, error) {
	p := j.Placement
	if p == nil {
		return netpack.Placement{}, errors.New("no placement")
	}
	np := netpack.Placement{Job: j.netpackJob(), INA: p.INA, Priority: uint8(p.PolicyPriority)}
	ps, ok := s.cfg.Cluster.Machine(p.PS)
	if !ok {
		return np, fmt.Errorf("PS host %s is not a machine of this cluster", p.PS)
	}
	np.PS = ps
	for _, w := range p.Workers {
		m, ok := s.cfg.Cluster.Machine(w.Host)
		if !ok {
			return np, fmt.Errorf("worker host %s is not a machine of this cluster", w.Host)
		}
		np.Workers = append(np.Workers, netpack.Worker{Machine: m, GPUs: w.GPUs})
	}
	slices.SortFunc(np.Workers, func(a, b netpack.Worker) int { return int(a.Machine) - int(b.Machine) })
	return np, nil
}
