package sim

import (
	"fmt"

	"github.com/inapack/inapack/netpack"
)

// SlotPolicy names how a ToR frees aggregator slots (docs/protocol.md: the switch's slot mode).
type SlotPolicy string

// Slot policies compared in the evaluation.
const (
	// ATP holds a slot from the first contribution until the PS's result passes back through
	// the switch: hold = skew + RTT(ToR <-> PS) + PS time.
	ATP SlotPolicy = "atp"
	// ESA frees a slot as soon as the last contribution arrives (hold = skew) and lets a higher
	// priority preempt a lower one; the evicted partial goes on to its PS.
	ESA SlotPolicy = "esa"
)

// SlotModel turns a slot policy into the number the fluid model needs: how long one chunk
// holds a slot. A ToR's peak INA rate is then memory / hold (every slot turns over once per hold).
type SlotModel struct {
	Policy SlotPolicy
	// SkewFrac is the time between a chunk's first and last contribution, as a fraction of
	// the rack RTT: workers of one job pace at the same rate but not in lock step.
	SkewFrac float64
	// PSSec is the time the PS takes to turn a completed sum into a result packet.
	PSSec float64
	// NoPreempt turns ESA's priority preemption off (an ablation: ESA's hold time with ATP's
	// fair sharing), so the two effects of ESA can be measured apart.
	NoPreempt bool
}

// DefaultSlotModel is the ESA model with the defaults documented in README.md (skew half an
// RTT, 5 µs at the PS). The papers give neither number; they are our choice.
func DefaultSlotModel() SlotModel { return SlotModel{Policy: ESA, SkewFrac: 0.5, PSSec: 5e-6} }

// HoldSec is the slot hold time for a rack whose ToR-to-PS round trip is rtt.
func (m SlotModel) HoldSec(rtt float64) float64 {
	skew := m.SkewFrac * rtt
	if m.Policy == ATP {
		return skew + rtt + m.PSSec
	}
	return skew
}

// Sharing is how the rate model divides a ToR's saturated INA capacity under this slot policy:
// ESA preempts by priority (a higher-priority chunk evicts a lower one's partial sum, which goes
// on to its PS, so the preempted job's traffic falls back to the PS path); ATP has no
// preemption, so colliding jobs end up max-min fair, as congestion control settles them.
func (m SlotModel) Sharing() netpack.Sharing {
	if m.Policy == ESA && !m.NoPreempt {
		return netpack.PriorityShare
	}
	return netpack.FairShare
}

// Reference is the slot model trace durations are converted to iterations with: ESA's, with this
// model's skew and PS time, whatever the policy under test. ESA and ATP runs (and INA-off runs,
// which convert with INA on) of one trace therefore simulate the same work; only how fast it
// gets done differs.
func (m SlotModel) Reference() SlotModel {
	r := m
	r.Policy, r.NoPreempt = ESA, false
	if r.SkewFrac <= 0 {
		r.SkewFrac = DefaultSlotModel().SkewFrac
	}
	return r
}

// Validate rejects unknown policies and non-positive hold times.
func (m SlotModel) Validate() error {
	if m.Policy != ATP && m.Policy != ESA {
		return fmt.Errorf("slot policy %q: want atp or esa", m.Policy)
	}
	if m.SkewFrac < 0 || m.PSSec < 0 || (m.Policy == ESA && m.SkewFrac == 0) {
		return fmt.Errorf("slot model: skew fraction (%v) and PS time (%v) must be >= 0, and ESA needs a positive skew",
			m.SkewFrac, m.PSSec)
	}
	return nil
}

// EffectiveCluster is a copy of c whose rack RTTs are replaced by the slot hold time, so
// that netpack's peak INA rate (memory / RTTSec) is the slot policy's; with ina false every
// rack's INA memory is zero. The scheduler and the rate model both see this cluster.
func EffectiveCluster(c *netpack.Cluster, m SlotModel, ina bool) *netpack.Cluster {
	cp := *c
	cp.Racks = append([]netpack.Rack(nil), c.Racks...)
	for i := range cp.Racks {
		r := &cp.Racks[i]
		if !ina {
			r.INAMemoryBytes = 0
			continue
		}
		if r.INAMemoryBytes > 0 {
			r.RTTSec = m.HoldSec(r.RTTSec)
		}
	}
	return &cp
}
