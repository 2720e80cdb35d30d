package scheduler

// This file is the scheduler's one contact with the netpack policy API: admission and placement
// go through engine, so a change there is fixed here only.

import (
	"fmt"

	"github.com/inapack/inapack/netpack"
)

// engine is a placement policy with the cluster state it decides on.
type engine struct {
	pol netpack.Policy
	st  *netpack.State
}

func newEngine(c *netpack.Cluster, policy string) (*engine, error) {
	pol, err := netpack.NewPolicy(policy, netpack.Options{})
	if err != nil {
		return nil, err
	}
	return &engine{pol: pol, st: netpack.NewState(c)}, nil
}

// Policies lists the placement policies the scheduler accepts.
func Policies() []string { return netpack.PolicyNames() }

// schedule admits jobs from waiting (in queue order) and places them; the caller starts each
// returned placement with start.
func (e *engine) schedule(waiting []*netpack.Job) []netpack.Placement {
	return e.pol.Schedule(e.st, waiting)
}

// start records a running job (also used to restore running jobs after a restart).
func (e *engine) start(p netpack.Placement) error {
	if err := e.st.Add(p); err != nil {
		return fmt.Errorf("placement of job %s: %w", p.Job.ID, err)
	}
	return nil
}

// finish frees a job's GPUs.
func (e *engine) finish(jobID string) { e.st.Remove(jobID) }

func (e *engine) freeGPUs(m netpack.MachineID) int { return e.st.FreeGPUs(m) }

// estimate is the equilibrium NetPack expects for the running jobs (ESA priority sharing).
func (e *engine) estimate() map[string]netpack.JobRate {
	rates := netpack.EstimateSharing(e.st.Cluster, e.st.Running, netpack.Joint, netpack.PriorityShare)
	out := make(map[string]netpack.JobRate, len(rates))
	for i, r := range rates {
		out[e.st.Running[i].Job.ID] = r
	}
	return out
}

// Plan is where policy would place j now on cluster c with running jobs already placed (the
// kube module's plugin and extender plan gangs with it); ok is false when j does not fit now. A
// running placement that does not fit c (a stale view) is skipped and reported in skipped.
func Plan(c *netpack.Cluster, running []netpack.Placement, policy string, j *netpack.Job) (p netpack.Placement, ok bool, skipped []error, err error) {
	pl, err := netpack.NewPlacer(policy, netpack.Options{})
	if err != nil {
		return p, false, nil, err
	}
	st := netpack.NewState(c)
	for _, r := range running {
		if err := st.Add(r); err != nil {
			skipped = append(skipped, err)
		}
	}
	p, ok = netpack.PlaceOne(pl, st, j)
	if ok {
		p.Priority = netpack.PriorityBySize.Of(j)
	}
	return p, ok, skipped, nil
}
