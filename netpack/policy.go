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

// Placer chooses where one job runs: its workers, its PS and whether it aggregates in the
// network. A scheduling round is Begin, any number of Place calls, then End.
type Placer interface {
	Name() string
	// Begin starts a round on st. st is not modified; the placer works on its own copy of the
	// free GPUs.
	Begin(st *State)
	// Place chooses a placement for j on the GPUs still free in this round (st less the jobs
	// placed earlier in the round), takes them, and returns it; ok is false when j does not fit.
	// Priority is left 0 (the policy's PriorityRule sets it).
	Place(j *Job) (p Placement, ok bool)
	// End closes the round. It returns the round's placements in the same order, with their INA
	// flags possibly revised (NetPack decides INA for the round as a whole).
	End(placed []Placement) []Placement
}

// QueueAware is a Placer that wants the round's queue before Begin: every job waiting, whether or
// not admission starts it now (NetPack prices the fragmentation a placement leaves for them).
type QueueAware interface {
	Queue(waiting []*Job)
}

// PriorityRule gives a job its ESA priority (Placement.Priority, the switch's priority_cap).
// Every policy built by NewPolicy applies the same rule, so priorities never differ by policy.
type PriorityRule int

const (
	// PriorityBySize ranks smaller total work higher (ESAPriority): the default.
	PriorityBySize PriorityRule = iota
	// PriorityNone gives every job 0: ESA's preemption then never fires between jobs.
	PriorityNone
)

func (r PriorityRule) String() string {
	if r == PriorityNone {
		return "none"
	}
	return "size"
}

// Of is j's priority under the rule.
func (r PriorityRule) Of(j *Job) uint8 {
	if r == PriorityNone {
		return 0
	}
	return esaPriority(j)
}

// Options tune a policy; the zero value is the documented default.
type Options struct {
	Mode         Mode // estimator used by NetPack when scoring (Joint by default)
	FullEstimate bool // NetPack: re-estimate the whole cluster per candidate instead of incrementally (tests, ablation)
	NoINA        bool // never enable INA in placements (the "INA disabled" comparison)
	// Admission is the admission rule by name (AdmissionNames; "" is AdmitFIFO). It is the same
	// rule whatever the placer.
	Admission string
	// Priority is the ESA priority rule, the same for every placer.
	Priority PriorityRule
}

var placers = map[string]func(Options) Placer{}

func register(name string, mk func(Options) Placer) { placers[name] = mk }

// NewPlacer builds a placer by name (see PolicyNames).
func NewPlacer(name string, o Options) (Placer, error) {
	mk, ok := placers[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (have %v)", name, PolicyNames())
	}
	return mk(o), nil
}

// NewPolicy is Compose(NewAdmission(o.Admission), NewPlacer(name), o.Priority).
func NewPolicy(name string, o Options) (Policy, error) {
	pl, err := NewPlacer(name, o)
	if err != nil {
		return nil, err
	}
	a, err := NewAdmission(o.Admission, o)
	if err != nil {
		return nil, err
	}
	return Compose(a, pl, o.Priority), nil
}

// PolicyNames lists the registered placers, sorted.
func PolicyNames() []string {
	var out []string
	for k := range placers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Compose is the policy that admits with a, places the admitted jobs one by one in admission
// order with pl, and sets each placement's priority by prio. Policies built this way differ
// only in what their placer decides.
func Compose(a Admission, pl Placer, prio PriorityRule) Policy {
	return &composed{a: a, pl: pl, prio: prio}
}

type composed struct {
	a    Admission
	pl   Placer
	prio PriorityRule
}

// Name is the placer's name, with "+<admission>" unless FIFO and "+prio-none" for PriorityNone.
func (c *composed) Name() string {
	n := c.pl.Name()
	if c.a.Name() != AdmitFIFO {
		n += "+" + c.a.Name()
	}
	if c.prio == PriorityNone {
		n += "+prio-none"
	}
	return n
}

func (c *composed) Schedule(st *State, waiting []*Job) []Placement {
	idx := c.a.Admit(st, waiting)
	if q, ok := c.pl.(QueueAware); ok {
		q.Queue(waiting)
	}
	c.pl.Begin(st)
	var placed []Placement
	for _, i := range idx {
		p, ok := c.pl.Place(waiting[i])
		if !ok {
			continue
		}
		p.Priority = c.prio.Of(waiting[i])
		placed = append(placed, p)
	}
	return c.pl.End(placed)
}

// PlaceOne places a single job on st with pl (one round of one job); ok is false when it does
// not fit now. Priority is left 0.
func PlaceOne(pl Placer, st *State, j *Job) (Placement, bool) {
	pl.Begin(st)
	p, ok := pl.Place(j)
	if !ok {
		pl.End(nil)
		return Placement{}, false
	}
	return pl.End([]Placement{p})[0], true
}
