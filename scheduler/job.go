package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/inapack/inapack/netpack"
)

// Submission is the body of POST /v1/jobs.
type Submission struct {
	Name string `json:"name,omitempty"`
	// GPUs the job needs; one worker runs per machine NetPack gives it GPUs on.
	GPUs int `json:"gpus"`
	// Model is a profile name ("resnet50", see netpack.ProfileNames) or an inline profile
	// {"name", "gradient_bytes", "compute_sec"}.
	Model ModelSpec `json:"model"`
	// Iterations to train.
	Iterations int `json:"iterations"`
	// BytesPerIteration, if set, replaces the model's gradient bytes (a multiple of 4: the
	// all-reduce carries int32 values); emulated clusters run scaled-down models this way.
	BytesPerIteration int `json:"bytes_per_iteration,omitempty"`
	// ComputeSec, if set, replaces the model's compute time per iteration.
	ComputeSec *float64 `json:"compute_sec,omitempty"`
	// PriorityClass 0..7 (default 0): higher classes are admitted first and always win aggregator
	// slots over lower ones; within a class the policy's ESA priority decides.
	PriorityClass int `json:"priority_class,omitempty"`
	// Pin, if set, fixes the placement instead of asking the policy (experiments such as make
	// validate, or an operator's choice); the job waits until its hosts have the GPUs free.
	Pin *Pin `json:"pin,omitempty"`
	// Integrity (default true) has the job's agents carry and check the integrity lane
	// (docs/protocol.md, "Integrity"): its PS and every worker get the same setting from here.
	Integrity *bool `json:"integrity,omitempty"`
}

// Pin is a placement given with a submission.
type Pin struct {
	Workers []PinnedWorker `json:"workers"`
	PS      string         `json:"ps"`
	// INA defaults to true; Priority (the ESA priority 0..255 before the class band) to the size
	// rule every policy uses.
	INA      *bool `json:"ina,omitempty"`
	Priority *int  `json:"priority,omitempty"`
}

// PinnedWorker is one worker of a pinned placement.
type PinnedWorker struct {
	Host string `json:"host"`
	GPUs int    `json:"gpus"`
}

// ModelSpec is a model profile, named or inline.
type ModelSpec struct{ netpack.Model }

// UnmarshalJSON accepts "name" or an inline profile object.
func (m *ModelSpec) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		p, ok := netpack.Profile(name)
		if !ok {
			return fmt.Errorf("unknown model %q (have %v, or give an inline profile)", name, netpack.ProfileNames())
		}
		m.Model = p
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(&m.Model)
}

// MaxPriorityClass is the highest priority class.
const MaxPriorityClass = 7

// Profile is the submission's model profile with its overrides applied, checked.
func (s *Submission) Profile() (netpack.Model, error) {
	m := s.Model.Model
	if s.BytesPerIteration != 0 {
		if s.BytesPerIteration < 0 || s.BytesPerIteration%4 != 0 || s.BytesPerIteration > 1<<30 {
			return m, fmt.Errorf("bytes_per_iteration %d: want a positive multiple of 4 up to 1 GiB", s.BytesPerIteration)
		}
		m.GradientBytes = float64(s.BytesPerIteration)
	}
	if s.ComputeSec != nil {
		m.ComputeSec = *s.ComputeSec
	}
	// The agents compute, then all-reduce (cmd/ina-worker): nothing of the compute overlaps the
	// communication, and NetPack must know.
	m.ForwardSec = m.ComputeSec
	if err := m.Validate(); err != nil {
		return m, err
	}
	if m.GradientBytes < 4 || m.GradientBytes > 1<<30 || m.GradientBytes != math.Trunc(m.GradientBytes) {
		return m, fmt.Errorf("model %q: gradient_bytes %v: want a whole number of bytes, 4 to 1 GiB", m.Name, m.GradientBytes)
	}
	if m.ComputeSec > 3600 {
		return m, fmt.Errorf("model %q: compute_sec %v is more than an hour per iteration", m.Name, m.ComputeSec)
	}
	return m, nil
}

// State is where a job is in its life.
type State string

// Job states. Queued jobs wait for admission; starting ones have a placement whose entries and
// agents are being set up; completed, failed and cancelled are final.
const (
	Queued    State = "queued"
	Starting  State = "starting"
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// Final reports whether s is an end state.
func (s State) Final() bool { return s == Completed || s == Failed || s == Cancelled }

// Job is one submitted job as GET /v1/jobs shows it (and as the state file keeps it).
type Job struct {
	ID            int           `json:"id"`
	Name          string        `json:"name,omitempty"`
	Pin           *Pin          `json:"pin,omitempty"`
	GPUs          int           `json:"gpus"`
	Model         netpack.Model `json:"model"`
	Iterations    int           `json:"iterations"`
	PriorityClass int           `json:"priority_class"`
	// NoIntegrity is a submission's integrity: false (zero, so that a job kept by an older
	// scheduler keeps the default, on).
	NoIntegrity bool  `json:"no_integrity,omitempty"`
	State       State `json:"state"`
	// Reason says why a job failed or was cancelled.
	Reason    string     `json:"reason,omitempty"`
	Submitted time.Time  `json:"submitted"`
	Started   *time.Time `json:"started,omitempty"`
	Finished  *time.Time `json:"finished,omitempty"`
	// JCTSec is Finished - Submitted (queueing included), QueueSec Started - Submitted.
	JCTSec   float64 `json:"jct_s,omitempty"`
	QueueSec float64 `json:"queue_s,omitempty"`
	// RunSec is how long a completed job's agents ran: from its first worker's start to its last
	// worker's summary (JCT less queueing and the time spent installing entries and starting).
	RunSec float64 `json:"run_s,omitempty"`

	Placement *Placement `json:"placement,omitempty"`
	// Progress is what the agents report: iterations done (the slowest worker's) and all-reduce
	// goodput.
	Progress Progress `json:"progress"`
	// Procs are the agent processes, for following them across a restart of the scheduler.
	Procs []Proc `json:"procs,omitempty"`
}

// Placement is where a job runs and how the switches treat it.
type Placement struct {
	Policy string `json:"policy"`
	// Workers in rank order. A worker on the PS's host is Local: it reaches the PS over a private
	// link inside that host and never crosses the switch.
	Workers []PlacedWorker `json:"workers"`
	PS      string         `json:"ps"`
	// INA is the policy's choice of aggregating in the switches; PriorityCap the ESA priority
	// written to them (the class's band, see Submission.PriorityClass).
	INA         bool `json:"ina"`
	PriorityCap int  `json:"priority_cap"`
	// PolicyPriority is the ESA priority the policy chose (0..255), before the class band.
	PolicyPriority int `json:"policy_priority"`
	// SwitchJob is the job id on the switches (1..1023), zero for a job that uses no switch.
	SwitchJob int      `json:"switch_job,omitempty"`
	Switches  []string `json:"switches,omitempty"`
	SlotBase  int      `json:"slot_base"`
	Window    int      `json:"window"`
	// PredictedMbps is NetPack's estimate of the per-worker all-reduce rate when the job started.
	PredictedMbps float64 `json:"predicted_mbps,omitempty"`
}

// PlacedWorker is one worker: its host, the GPUs it stands for, and its rank (worker bit).
type PlacedWorker struct {
	Host  string `json:"host"`
	GPUs  int    `json:"gpus"`
	Rank  int    `json:"rank"`
	Local bool   `json:"local,omitempty"`
}

// Progress is the agents' own measurement.
type Progress struct {
	Iterations int `json:"iterations"`
	// ThroughputMbps is the all-reduce goodput per worker (tensor bits / all-reduce time, the
	// first iteration left out), averaged over the workers: the latest iteration's while running,
	// the whole run's at the end.
	ThroughputMbps float64 `json:"throughput_mbps"`
	// Exact counts worker-iterations whose result equalled the exact sum; Wrong those that did not.
	Exact int `json:"exact"`
	Wrong int `json:"wrong"`
	// Sent and Resent are the workers' data packets and retransmissions (timeouts), summed; known
	// once the workers end.
	Sent   int `json:"sent"`
	Resent int `json:"resent"`
	// Corrupt counts the packets the integrity check caught, none of them summed: at the PS (data
	// whose values a switch or link corrupted; its report every second) and at the workers
	// (results; known once they end).
	Corrupt int `json:"corrupt"`
}

// netpackJob is the job as the placement engine sees it.
func (j *Job) netpackJob() *netpack.Job {
	return &netpack.Job{ID: jobKey(j.ID), GPUs: j.GPUs, Model: j.Model, Iterations: j.Iterations}
}

func jobKey(id int) string { return fmt.Sprint(id) }

// values is the tensor length of one all-reduce.
func (j *Job) values() int { return int(j.Model.GradientBytes) / 4 }
