package netpack

import (
	"fmt"
	"sort"
)

// Policy decides which waiting jobs start now and where.
type Policy interface {
	Name() string
	// Schedule returns placements for the jobs it starts now, in the order the caller must apply
	// them with State.Add; together they fit st's free GPUs. It never modifies st, never moves a
	// running job, and leaves out jobs that do not fit now (they keep waiting).
	Schedule(st *State, waiting []*Job) []Placement
}

// Options tune a policy; the zero value is the documented default.
type Options struct {
	Mode         Mode // estimator used by NetPack when scoring (Joint by default)
	FullEstimate bool // NetPack: re-estimate the whole cluster per candidate instead of incrementally (tests, ablation)
	NoINA        bool // never enable INA in placements (the "INA disabled" comparison)
}

var policies = map[string]func(Options) Policy{}

func register(name string, mk func(Options) Policy) { policies[name] = mk }

// NewPolicy builds a policy by name (see PolicyNames).
func NewPolicy(name string, o Options) (Policy, error) {
	mk, ok := policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (have %v)", name, PolicyNames())
	}
	return mk(o), nil
}

// PolicyNames lists the registered policies, sorted.
func PolicyNames() []string {
	var out []string
	for k := range policies {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
