package netpack

import "fmt"

// Job is one data-parallel training job with a parameter server.
type Job struct {
	ID         string  `json:"id" yaml:"id"`
	GPUs       int     `json:"gpus" yaml:"gpus"`
	Model      Model   `json:"model" yaml:"model"`
	Iterations int     `json:"iterations" yaml:"iterations"`
	Submit     float64 `json:"submit,omitempty" yaml:"submit,omitempty"` // seconds from trace start
	// PSMaxGPUs, if positive, caps the job's GPUs on its PS's machine: NetPack's placer puts the
	// PS only on a machine holding at most that many of them, or none. A job run as worker
	// processes of PSMaxGPUs GPUs or more, several to a machine (Kubernetes pods), sets it to
	// their smallest: only one of them can reach a PS on its own machine, over the machine's
	// private link; the others would have to reach it through the switch port the PS is behind.
	// 0 (the default) is no cap: one worker per machine.
	PSMaxGPUs int `json:"psMaxGPUs,omitempty" yaml:"psMaxGPUs,omitempty"`
}

// PSAllowed says whether machine m may host the PS of j with workers ws (PSMaxGPUs).
func (j *Job) PSAllowed(ws []Worker, m MachineID) bool {
	if j.PSMaxGPUs <= 0 {
		return true
	}
	for _, w := range ws {
		if w.Machine == m {
			return w.GPUs <= j.PSMaxGPUs
		}
	}
	return true
}

// Validate checks a job against the cluster it is meant for: an impossible job (more GPUs than
// the cluster has) is an error, not a job that waits for ever.
func (j *Job) Validate(c *Cluster) error {
	if j.ID == "" {
		return fmt.Errorf("job: id is empty")
	}
	if j.GPUs <= 0 {
		return fmt.Errorf("job %s: gpus must be positive, got %d", j.ID, j.GPUs)
	}
	if j.Iterations <= 0 {
		return fmt.Errorf("job %s: iterations must be positive, got %d", j.ID, j.Iterations)
	}
	if j.PSMaxGPUs < 0 {
		return fmt.Errorf("job %s: psMaxGPUs must be 0 (no cap) or positive, got %d", j.ID, j.PSMaxGPUs)
	}
	if j.Submit < 0 || j.Submit != j.Submit || j.Submit > 1e15 {
		return fmt.Errorf("job %s: submit must be a time >= 0 in seconds, got %v", j.ID, j.Submit)
	}
	if err := j.Model.Validate(); err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	if c != nil && j.GPUs > c.TotalGPUs() {
		return fmt.Errorf("job %s: needs %d GPUs, cluster %q has %d", j.ID, j.GPUs, c.Name, c.TotalGPUs())
	}
	return nil
}

// WorkBytes is the gradient volume one worker pushes over the job's life, used to rank remaining work.
func (j *Job) WorkBytes() float64 { return float64(j.Iterations) * j.Model.GradientBytes }
