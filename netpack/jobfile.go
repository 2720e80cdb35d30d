package netpack

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// jobFile is the on-disk job list: either {jobs: [...]} or a bare list (YAML or JSON).
type jobFile struct {
	Jobs []jobEntry `yaml:"jobs"`
}

type jobEntry struct {
	ID         string    `yaml:"id"`
	GPUs       int       `yaml:"gpus"`
	Model      modelSpec `yaml:"model"`
	Iterations int       `yaml:"iterations"`
	Submit     float64   `yaml:"submit"`
}

// modelSpec is a shipped profile name or an inline profile.
type modelSpec struct{ m Model }

func (s *modelSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		m, ok := Profile(n.Value)
		if !ok {
			return fmt.Errorf("line %d: unknown model %q (shipped: %v; or give {name, gradient_bytes, compute_sec})", n.Line, n.Value, ProfileNames())
		}
		s.m = m
		return nil
	}
	var m Model
	if err := n.Decode(&m); err != nil {
		return err
	}
	s.m = m
	return nil
}

// maxJobs bounds a job file, so a hostile file cannot exhaust memory.
const maxJobs = 1 << 20

// LoadJobs reads a job file (YAML or JSON).
func LoadJobs(path string) ([]*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("job file: %w", err)
	}
	jobs, err := ParseJobs(data)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	return jobs, nil
}

// ParseJobs parses and validates a job list (each job alone; use Job.Validate for a cluster).
// Job ids must be unique.
func ParseJobs(data []byte) ([]*Job, error) {
	var entries []jobEntry
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("malformed job list: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("job list is empty")
	}
	doc := root.Content[0]
	switch doc.Kind {
	case yaml.SequenceNode:
		if err := decodeStrict(doc, &entries); err != nil {
			return nil, err
		}
	case yaml.MappingNode:
		var f jobFile
		if err := decodeStrict(doc, &f); err != nil {
			return nil, err
		}
		entries = f.Jobs
	default:
		return nil, fmt.Errorf("job list must be a list or {jobs: [...]}")
	}
	if len(entries) > maxJobs {
		return nil, fmt.Errorf("job list has %d jobs, more than %d", len(entries), maxJobs)
	}
	seen := map[string]bool{}
	jobs := make([]*Job, 0, len(entries))
	for i, e := range entries {
		j := &Job{ID: e.ID, GPUs: e.GPUs, Model: e.Model.m, Iterations: e.Iterations, Submit: e.Submit}
		if err := j.Validate(nil); err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("jobs[%d]: duplicate id %q", i, j.ID)
		}
		seen[j.ID] = true
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// decodeStrict decodes n into v, rejecting unknown fields.
func decodeStrict(n *yaml.Node, v any) error {
	out, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("malformed job list: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed job list: %w", err)
	}
	return nil
}
