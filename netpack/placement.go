package netpack

import (
	"fmt"
	"slices"
)

// Worker is the part of a job on one machine; GPUs on one machine aggregate locally first, so a
// worker is one gradient stream whatever its GPU count.
type Worker struct {
	Machine MachineID `json:"machine"`
	GPUs    int       `json:"gpus"`
}

// Placement is where a job runs. Running jobs never move.
type Placement struct {
	Job      *Job      `json:"-"`
	Workers  []Worker  `json:"workers"`  // distinct machines, ascending
	PS       MachineID `json:"ps"`       // the machine hosting the parameter server (uses no GPU)
	INA      bool      `json:"ina"`      // aggregate in the ToRs of the worker racks
	Priority uint8     `json:"priority"` // ESA priority cap (docs/protocol.md: higher wins)
}

// Validate checks the placement is well formed for c (GPUs add up, machines exist and are distinct).
func (p *Placement) Validate(c *Cluster) error {
	if p.Job == nil {
		return fmt.Errorf("placement: no job")
	}
	if len(p.Workers) == 0 {
		return fmt.Errorf("placement of %s: no workers", p.Job.ID)
	}
	n := 0
	for i, w := range p.Workers {
		if w.Machine < 0 || int(w.Machine) >= len(c.Machines) {
			return fmt.Errorf("placement of %s: machine %d does not exist", p.Job.ID, w.Machine)
		}
		if i > 0 && p.Workers[i-1].Machine >= w.Machine {
			return fmt.Errorf("placement of %s: workers must be on distinct machines in ascending order", p.Job.ID)
		}
		if w.GPUs <= 0 {
			return fmt.Errorf("placement of %s: worker on machine %d has %d GPUs", p.Job.ID, w.Machine, w.GPUs)
		}
		n += w.GPUs
	}
	if n != p.Job.GPUs {
		return fmt.Errorf("placement of %s: workers hold %d GPUs, job needs %d", p.Job.ID, n, p.Job.GPUs)
	}
	if p.PS < 0 || int(p.PS) >= len(c.Machines) {
		return fmt.Errorf("placement of %s: PS machine %d does not exist", p.Job.ID, p.PS)
	}
	return nil
}

// State is the cluster with its running jobs and free GPUs.
type State struct {
	Cluster *Cluster
	Running []Placement
	free    []int
	freeSum int
	index   map[string]int // job id -> position in Running

	// Recent changes, so a policy that keeps its own view can catch up without a full scan.
	journal []string // job ids added or removed, oldest first
	gen     uint64   // changes ever made; journal holds the last len(journal)
}

// journalMax bounds the change journal; a reader further behind re-reads Running in full.
const journalMax = 4096

func (s *State) record(jobID string) {
	if len(s.journal) == journalMax {
		s.journal = append(s.journal[:0], s.journal[journalMax/2:]...)
	}
	s.journal = append(s.journal, jobID)
	s.gen++
}

// changesSince returns the ids changed after generation gen and the current generation; ok is
// false when the journal no longer reaches back that far.
func (s *State) changesSince(gen uint64) (ids []string, now uint64, ok bool) {
	base := s.gen - uint64(len(s.journal))
	if gen < base || gen > s.gen {
		return nil, s.gen, false
	}
	return s.journal[gen-base:], s.gen, true
}

// NewState is an empty cluster.
func NewState(c *Cluster) *State {
	s := &State{Cluster: c, free: make([]int, len(c.Machines)), index: map[string]int{}}
	for i := range c.Machines {
		s.free[i] = c.Machines[i].GPUs
		s.freeSum += s.free[i]
	}
	return s
}

// FreeGPUs is the number of idle GPUs on machine m.
func (s *State) FreeGPUs(m MachineID) int { return s.free[m] }

// TotalFreeGPUs is the number of idle GPUs in the cluster.
func (s *State) TotalFreeGPUs() int { return s.freeSum }

// Lookup returns the running placement of a job.
func (s *State) Lookup(jobID string) (Placement, bool) {
	i, ok := s.index[jobID]
	if !ok {
		return Placement{}, false
	}
	return s.Running[i], true
}

// Add starts a placed job; it fails, changing nothing, if the placement is malformed, the job id
// is already running or a machine lacks the GPUs.
func (s *State) Add(p Placement) error {
	if err := p.Validate(s.Cluster); err != nil {
		return err
	}
	if _, dup := s.index[p.Job.ID]; dup {
		return fmt.Errorf("job %s is already running", p.Job.ID)
	}
	for _, w := range p.Workers {
		if s.free[w.Machine] < w.GPUs {
			return fmt.Errorf("job %s: machine %d has %d free GPUs, placement wants %d", p.Job.ID, w.Machine, s.free[w.Machine], w.GPUs)
		}
	}
	for _, w := range p.Workers {
		s.free[w.Machine] -= w.GPUs
	}
	s.freeSum -= p.Job.GPUs
	s.index[p.Job.ID] = len(s.Running)
	s.Running = append(s.Running, p)
	s.record(p.Job.ID)
	return nil
}

// Remove ends a running job and frees its GPUs.
func (s *State) Remove(jobID string) (Placement, bool) {
	i, ok := s.index[jobID]
	if !ok {
		return Placement{}, false
	}
	p := s.Running[i]
	for _, w := range p.Workers {
		s.free[w.Machine] += w.GPUs
	}
	s.freeSum += p.Job.GPUs
	last := len(s.Running) - 1
	s.Running[i] = s.Running[last]
	s.index[s.Running[i].Job.ID] = i
	s.Running = s.Running[:last]
	delete(s.index, jobID)
	s.record(jobID)
	return p, true
}

// Clone is an independent copy (placements share their Job and Workers, which are never mutated).
func (s *State) Clone() *State {
	c := &State{Cluster: s.Cluster, Running: slices.Clone(s.Running), free: slices.Clone(s.free), freeSum: s.freeSum,
		index: make(map[string]int, len(s.index))}
	for k, v := range s.index {
		c.index[k] = v
	}
	return c
}

// sortWorkers puts workers in ascending machine order, as Placement.Validate requires.
func sortWorkers(ws []Worker) {
	slices.SortFunc(ws, func(a, b Worker) int { return int(a.Machine) - int(b.Machine) })
}

// TotalGPUs is the number of GPUs in the cluster.
func (s *State) TotalGPUs() int { return s.Cluster.TotalGPUs() }
