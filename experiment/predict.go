package experiment

// This file is the one contact of demo and validate with the simulator and the estimator.

import (
	"fmt"
	"math"
	"slices"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/scheduler"
	"github.com/inapack/inapack/sim"
)

// network is the simulator's model of the emulated switches and agents: the agents' window,
// ECN marking on or off as the switches were set, the slot model of the setting.
func network(sm sim.SlotModel, window int, ecn bool) sim.Network {
	return sim.Network{Slots: sm, Window: float64(window), ECNOff: !ecn}
}

// physicalCluster is the topology as the simulator takes it: link rates as they are (it counts
// packets), every rack's RTT the calibrated chunk round trip.
func physicalCluster(topo *topology.Topology, cal calibration) (*scheduler.Cluster, error) {
	return scheduler.NewCluster(topo, scheduler.ClusterParams{RTT: time.Duration(cal.RTTSec * float64(time.Second))})
}

// predictJCT simulates the trace on the topology (calibrated) under a policy and returns each
// job's JCT by name. The simulator schedules every 0.25 s, as often as the service looks at its
// queue.
func predictJCT(topo *topology.Topology, cal calibration, policy string, trace []scheduler.TraceJob) (map[string]float64, error) {
	c, err := physicalCluster(topo, cal)
	if err != nil {
		return nil, err
	}
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
	res, err := sim.Run(sim.Config{Cluster: c.Model, Network: network(sim.DefaultSlotModel(), cal.Window, false), Policy: pol,
		Interval: 0.25}, jobs)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, j := range res.Jobs {
		out[j.ID] = j.JCT()
	}
	return out, nil
}

// predict fills every job's predicted throughput and JCT: the estimator's (NetPack's equilibrium,
// re-read at every completion as the fluid model runs the mix to its end, on the topology with
// links in payload bytes, the calibrated slot hold times and window caps) and the simulator's
// (sim.Predict on the physical topology with the calibrated RTT).
func predict(res *results) error {
	fitted := map[string]float64{}
	defer func() { res.SwitchPacketSec = fitted }()
	topo, err := topology.Load(res.Topology)
	if err != nil {
		return err
	}
	byName := map[string]*jobResult{}
	for i := range res.Jobs {
		byName[res.Jobs[i].Job] = &res.Jobs[i]
	}
	for _, g := range defaultGroups {
		cal, ok := res.Calibration[g.Name]
		if !ok {
			if slices.ContainsFunc(res.Mixes, func(m mix) bool { return m.Group == g.Name }) {
				return fmt.Errorf("no calibration for %s", g.Name)
			}
			continue // validate --only ran none of its mixes
		}
		slots := g.Slots
		topo.INA.Settings = &cp.Settings{ActiveSlots: &slots}
		sm := sim.SlotModel{Policy: sim.SlotPolicy(g.Release), SkewFrac: sim.DefaultSlotModel().SkewFrac, PSSec: sim.DefaultSlotModel().PSSec,
			NoPreempt: !g.Preempt}
		c, err := calibratedCluster(topo, sm, cal)
		if err != nil {
			return err
		}
		phys, err := physicalCluster(topo, cal)
		if err != nil {
			return err
		}
		nw := network(sm, res.Window, res.ECNThreshold > 0)
		if nw.SwitchPacketSec, err = fitSwitchPacketSec(phys, nw, cal); err != nil {
			return err
		}
		fitted[g.Name] = nw.SwitchPacketSec
		for _, m := range res.Mixes {
			if m.Group != g.Name {
				continue
			}
			var ps []netpack.Placement
			for _, mj := range m.Jobs {
				p := placed(c, mj)
				p.Job.Model = windowed(p.Job.Model, cal.windowBps(res.Window))
				if r := byName[mj.Name]; r != nil && r.SwitchPriority != nil {
					// Rank as the switches did: two priorities the service scaled to one
					// priority_cap do not preempt each other there.
					p.Priority = uint8(*r.SwitchPriority)
				}
				ps = append(ps, p)
			}
			for id, o := range fluidRun(c.Model, ps, sm.Sharing()) {
				if r := byName[id]; r != nil {
					r.EstimatedMbps, r.EstimatedJCT = o.mbps, o.jct
				}
			}
			// The simulator: the physical links, the jobs' own models (it has the window) and
			// the slot ranges the service gave them.
			var mixJobs []sim.MixJob
			for i := range m.Jobs {
				p := ps[i]
				job := *p.Job
				job.Model = synthetic(m.Jobs[i])
				p.Job = &job
				mj := sim.MixJob{Placement: p, Window: float64(res.Window)}
				if r := byName[job.ID]; r != nil {
					mj.SlotBase, mj.SlotRange = float64(r.SlotBase), true
				}
				mixJobs = append(mixJobs, mj)
			}
			out, err := sim.Predict(phys.Model, mixJobs, nw)
			if err != nil {
				return fmt.Errorf("simulating mix %d: %w", m.ID, err)
			}
			for _, o := range out {
				if r := byName[o.ID]; r != nil {
					r.SimulatedMbps, r.SimulatedJCT = o.CommBps*8/1e6, o.JCT
				}
			}
		}
	}
	return nil
}

// calibratedCluster is NetPack's model of topo for predictions: link rates in gradient bytes (a
// frame of wire.FrameLen carries chunkBytes), slots held for the slot model's hold time at the
// calibrated RTT.
func calibratedCluster(topo *topology.Topology, sm sim.SlotModel, cal calibration) (*scheduler.Cluster, error) {
	hold := time.Duration(sm.HoldSec(cal.RTTSec) * float64(time.Second))
	c, err := scheduler.NewCluster(topo, scheduler.ClusterParams{RTT: hold})
	if err != nil {
		return nil, err
	}
	payload := float64(chunkBytes) / wire.FrameLen
	for i := range c.Model.Machines {
		c.Model.Machines[i].NICGbps *= payload
	}
	for i := range c.Model.Racks {
		c.Model.Racks[i].UplinkGbps *= payload
	}
	c.Model.CoreGbps *= payload
	return c, nil
}

// windowed is m as the agents run it: compute, then an all-reduce that moves at most windowBps
// (the window's chunks per round trip). As a model without overlap whose all-reduce can take no
// less than G/windowBps, its demand is windowBps, so the estimator caps the job's flow there and
// hands what it leaves to the others, and an iteration takes compute + G/min(flow, windowBps).
func windowed(m netpack.Model, windowBps float64) netpack.Model {
	m.ForwardSec = m.ComputeSec
	m.ComputeSec += m.GradientBytes / windowBps
	return m
}

// fitSwitchPacketSec is the per-packet switch cost under which the simulator gives the lone wide
// calibration job the goodput it measured (bisection; 0 if it is not slower than the simulator
// predicts without one).
func fitSwitchPacketSec(phys *scheduler.Cluster, nw sim.Network, cal calibration) (float64, error) {
	if cal.WideMbps <= 0 {
		return 0, nil // calibrated before the wide job existed
	}
	p := placed(phys, cal.Wide)
	mbps := func(sec float64) (float64, error) {
		n := nw
		n.SwitchPacketSec = sec
		out, err := sim.Predict(phys.Model, []sim.MixJob{{Placement: p, Window: float64(cal.Window)}}, n)
		if err != nil {
			return 0, err
		}
		return out[0].CommBps * 8 / 1e6, nil
	}
	if free, err := mbps(0); err != nil || free <= cal.WideMbps {
		return 0, err
	}
	// The bracket grows until the simulator is slower than the measurement: BMv2 on a busy
	// machine needed 0.8-1.1 ms per packet, and a fixed bound of 1 ms clipped one fit at it.
	lo, hi := 0.0, 1e-3
	for {
		got, err := mbps(hi)
		if err != nil {
			return 0, err
		}
		if got <= cal.WideMbps {
			break
		}
		if hi >= 1 {
			return 0, fmt.Errorf("validate: the lone wide job's %.3f Mbit/s needs a switch slower than 1 s per packet", cal.WideMbps)
		}
		lo, hi = hi, hi*2
	}
	for range 50 {
		mid := (lo + hi) / 2
		got, err := mbps(mid)
		if err != nil {
			return 0, err
		}
		if got > cal.WideMbps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}

// placed is job w on c as it ran (c's machines are the topology's, whatever its link model): one
// GPU per worker host, workers in machine order, the synthetic model without a window.
func placed(c *scheduler.Cluster, w mixJob) netpack.Placement {
	p := netpack.Placement{Job: &netpack.Job{ID: w.Name, GPUs: len(w.Workers), Iterations: w.Iterations, Model: synthetic(w)},
		INA: w.INA, Priority: uint8(w.Priority)}
	p.PS, _ = c.Machine(w.PS)
	for _, h := range w.Workers {
		m, _ := c.Machine(h)
		p.Workers = append(p.Workers, netpack.Worker{Machine: m, GPUs: 1})
	}
	slices.SortFunc(p.Workers, func(a, b netpack.Worker) int { return int(a.Machine) - int(b.Machine) })
	return p
}

// synthetic is job w's model: its gradient, and its compute as the forward pass too.
func synthetic(w mixJob) netpack.Model {
	return netpack.Model{Name: "synthetic", GradientBytes: float64(w.Bytes), ComputeSec: w.ComputeSec, ForwardSec: w.ComputeSec}
}

type outcome struct{ mbps, jct float64 }

// fluidRun runs jobs started together at the estimator's rates, re-estimated whenever one ends:
// each job's all-reduce goodput (gradient bits over time spent all-reducing) and completion time.
func fluidRun(c *netpack.Cluster, ps []netpack.Placement, sharing netpack.Sharing) map[string]outcome {
	left := map[string]float64{}
	comm := map[string]float64{}
	for _, p := range ps {
		left[p.Job.ID] = float64(p.Job.Iterations)
	}
	out := map[string]outcome{}
	now := 0.0
	running := slices.Clone(ps)
	for len(running) > 0 {
		rates := netpack.EstimateSharing(c, running, netpack.Joint, sharing)
		dt := math.Inf(1)
		for i, p := range running {
			if ips := p.Job.Model.IterPerSec(rates[i].FlowBps); ips > 0 {
				dt = min(dt, left[p.Job.ID]/ips)
			}
		}
		if math.IsInf(dt, 1) {
			for _, p := range running {
				out[p.Job.ID] = outcome{0, math.Inf(1)}
			}
			break
		}
		now += dt
		var next []netpack.Placement
		for i, p := range running {
			m := &p.Job.Model
			ips := m.IterPerSec(rates[i].FlowBps)
			done := ips * dt
			left[p.Job.ID] -= done
			if rates[i].FlowBps > 0 {
				comm[p.Job.ID] += done * m.GradientBytes / rates[i].FlowBps
			}
			if left[p.Job.ID] <= 1e-9 {
				out[p.Job.ID] = outcome{float64(p.Job.Iterations) * m.GradientBytes * 8 / comm[p.Job.ID] / 1e6, now}
				continue
			}
			next = append(next, p)
		}
		running = next
	}
	return out
}
