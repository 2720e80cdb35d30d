package main

// This file is the demo's one contact with the simulator.

import (
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
	"github.com/inapack/inapack/sim"
)

// predictJCT simulates the trace on the scheduler's model of the cluster under a policy and
// returns each job's JCT by name. The simulator schedules every 0.25 s, as often as the service
// looks at its queue.
func predictJCT(c *scheduler.Cluster, policy string, trace []scheduler.TraceJob) (map[string]float64, error) {
	pol, err := netpack.NewPolicy(policy, netpack.Options{})
	if err != nil {
		return nil, err
	}
	jobs := make([]*netpack.Job, len(trace))
	for i, tj := range trace {
		m, err := tj.Profile()
		if err != nil {
			return nil, err
		}
		jobs[i] = &netpack.Job{ID: tj.Name, GPUs: tj.GPUs, Model: m, Iterations: tj.Iterations, Submit: tj.SubmitSec}
	}
	// The physical cluster; sim.Network's defaults are ESA slots with preemption.
	res, err := sim.Run(sim.Config{Cluster: c.Model, Policy: pol, Interval: 0.25}, jobs)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, j := range res.Jobs {
		out[j.ID] = j.JCT()
	}
	return out, nil
}
