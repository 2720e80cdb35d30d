package netpack

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Model is the per-iteration profile of a data-parallel training job.
type Model struct {
	Name          string  `json:"name" yaml:"name"`
	Params        float64 `json:"params,omitempty" yaml:"params,omitempty"` // trainable parameters
	GradientBytes float64 `json:"gradient_bytes" yaml:"gradient_bytes"`     // bytes each worker pushes per iteration
	ComputeSec    float64 `json:"compute_sec" yaml:"compute_sec"`           // forward+backward per iteration on one GPU
	// ForwardSec is the part of ComputeSec that communication cannot overlap (the forward pass:
	// it needs the updated parameters); the rest overlaps the gradient push. 0: perfect overlap;
	// ForwardSec = ComputeSec: none (compute, then all-reduce, as cmd/ina-worker does).
	ForwardSec  float64 `json:"forward_sec,omitempty" yaml:"forward_sec,omitempty"`
	BatchPerGPU int     `json:"batch_per_gpu,omitempty" yaml:"batch_per_gpu,omitempty"`
	Source      string  `json:"source,omitempty" yaml:"source,omitempty"` // where the numbers come from
}

// Validate rejects profiles that would make rates meaningless.
func (m *Model) Validate() error {
	if m.Name == "" {
		return fmt.Errorf("model: name is empty")
	}
	if !positive(m.GradientBytes) {
		return fmt.Errorf("model %q: gradient_bytes must be a positive number, got %v", m.Name, m.GradientBytes)
	}
	if !positive(m.ComputeSec) {
		return fmt.Errorf("model %q: compute_sec must be a positive number, got %v", m.Name, m.ComputeSec)
	}
	if !(m.ForwardSec >= 0 && m.ForwardSec <= m.ComputeSec) {
		return fmt.Errorf("model %q: forward_sec must be in 0..compute_sec (%v), got %v", m.Name, m.ComputeSec, m.ForwardSec)
	}
	return nil
}

// DemandBps is the compute-bound flow in gradient bytes/s per worker: the rate at which the
// whole gradient moves while the overlappable part of compute (ComputeSec − ForwardSec) runs.
// A faster network does not make the job faster. Without overlap (ForwardSec = ComputeSec) it is
// +Inf: every byte/s more shortens the iteration.
func (m *Model) DemandBps() float64 {
	if m.ForwardSec >= m.ComputeSec {
		return math.Inf(1)
	}
	return m.GradientBytes / (m.ComputeSec - m.ForwardSec)
}

// scoreDemand is the flow placement scores speed against: DemandBps, or for a model without
// overlap (infinite demand) the flow that moves the gradient in one compute time.
func (m *Model) scoreDemand() float64 {
	if m.ForwardSec >= m.ComputeSec {
		return m.GradientBytes / m.ComputeSec
	}
	return m.DemandBps()
}

// IterPerSec is the iteration rate at a per-worker flow of f bytes/s (partial overlap):
// 1 / (ForwardSec + max(ComputeSec − ForwardSec, GradientBytes / f)).
func (m *Model) IterPerSec(f float64) float64 {
	if !(f > 0) {
		return 0
	}
	return 1 / (m.ForwardSec + max(m.ComputeSec-m.ForwardSec, m.GradientBytes/f))
}

// Profile returns a shipped model profile by name (case-insensitive).
func Profile(name string) (Model, bool) {
	m, ok := profiles[strings.ToLower(name)]
	return m, ok
}

// ProfileNames lists the shipped profiles, sorted.
func ProfileNames() []string {
	var out []string
	for k := range profiles {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
