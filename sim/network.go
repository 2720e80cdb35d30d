package sim

import (
	"fmt"
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

// Network is the physics of the flow-level model that the cluster does not describe. Link rates,
// RTTs and INA memory come from the netpack.Cluster (Gbit/s as floats: 0.01 is 10 Mbit/s; RTTSec
// is the ToR-PS round trip; INAMemoryBytes is slots x ChunkBytes). The zero value of every field
// is the documented default (DefaultNetwork).
type Network struct {
	// Slots: ESA or ATP slot release, skew, PS answer time, preemption on or off.
	Slots SlotModel
	// ChunkBytes is the gradient payload of one packet and one aggregator slot
	// (default wire.NumValues x 4 = 256); PacketBytes the packet on the wire (default
	// wire.FrameLen = 314). Links carry packets, jobs progress by chunks.
	ChunkBytes, PacketBytes float64
	// Window caps a job's chunks in flight (the agent's window, also its slot range;
	// default wire.NumSlots = 1024). InitialWindow is not modelled: windows are at equilibrium.
	Window float64
	// ECNOff: switches never mark (their default threshold 0x7FFFF), so windows stay full and
	// queues share the links; otherwise congestion control reacts to ECN marks (the marking
	// threshold does not enter the equilibrium model: README "Network model").
	ECNOff bool
	// CoreRTTSec is added to the base RTT of streams that cross the core (default 10 µs).
	CoreRTTSec float64
	// SwitchPacketSec is the per-packet cost of a ToR's pipeline (its packet rate is at most
	// 1/SwitchPacketSec); PSPacketSec the per-packet cost at a PS host. 0: no limit.
	SwitchPacketSec, PSPacketSec float64
}

// DefaultNetwork is the zero Network with its defaults filled in.
func DefaultNetwork() Network { return Network{}.withDefaults() }

func (n Network) withDefaults() Network {
	if n.Slots.Policy == "" {
		n.Slots = DefaultSlotModel()
	}
	if n.ChunkBytes == 0 {
		n.ChunkBytes = 4 * wire.NumValues
	}
	if n.PacketBytes == 0 {
		n.PacketBytes = wire.FrameLen
	}
	if n.Window == 0 {
		n.Window = wire.NumSlots
	}
	if n.CoreRTTSec == 0 {
		n.CoreRTTSec = 10e-6
	}
	return n
}

// Validate rejects impossible settings.
func (n Network) Validate() error {
	n = n.withDefaults()
	if err := n.Slots.Validate(); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
		pos  bool
	}{{"chunk bytes", n.ChunkBytes, true}, {"packet bytes", n.PacketBytes, true}, {"window", n.Window, true},
		{"core RTT", n.CoreRTTSec, false},
		{"switch per-packet cost", n.SwitchPacketSec, false}, {"PS per-packet cost", n.PSPacketSec, false}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || (f.pos && f.v == 0) {
			return fmt.Errorf("network: %s must be a finite number >= 0 (> 0 where it sizes packets or windows), got %v", f.name, f.v)
		}
	}
	if n.PacketBytes < n.ChunkBytes {
		return fmt.Errorf("network: packet bytes (%v) below chunk bytes (%v)", n.PacketBytes, n.ChunkBytes)
	}
	if n.Window < 1 {
		return fmt.Errorf("network: window must be at least 1 chunk, got %v", n.Window)
	}
	return nil
}

// Mbps converts megabits per second to the Gbit/s of netpack's cluster types.
func Mbps(x float64) float64 { return x / 1000 }
