package netpack

import (
	"fmt"
	"sort"
	"strings"
)

// Model is the per-iteration profile of a data-parallel training job.
type Model struct {
	Name          string  `json:"name" yaml:"name"`
	Params        float64 `json:"params,omitempty" yaml:"params,omitempty"` // trainable parameters
	GradientBytes float64 `json:"gradient_bytes" yaml:"gradient_bytes"`     // bytes each worker pushes per iteration
	ComputeSec    float64 `json:"compute_sec" yaml:"compute_sec"`           // forward+backward per iteration on one GPU
	BatchPerGPU   int     `json:"batch_per_gpu,omitempty" yaml:"batch_per_gpu,omitempty"`
	Source        string  `json:"source,omitempty" yaml:"source,omitempty"` // where the numbers come from
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
	return nil
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
