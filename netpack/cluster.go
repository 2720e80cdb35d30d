package netpack

import (
	"fmt"
	"github.com/inapack/inapack/p4src/wire"
	"math"
)

// MachineID indexes Cluster.Machines.
type MachineID int32

// Machine is one host: GPUs behind one NIC attached to its rack's ToR.
type Machine struct {
	Rack    int     // index into Cluster.Racks
	GPUs    int     // GPUs on the machine
	NICGbps float64 // host NIC capacity, each direction
}

// Rack is one ToR switch and the machines under it (Cluster.Machines[First : First+Count]).
type Rack struct {
	Name           string
	First          MachineID
	Count          int
	UplinkGbps     float64 // ToR to core capacity, each direction
	INAMemoryBytes float64 // aggregator memory usable for INA; 0 means the ToR does no INA
	RTTSec         float64 // round trip a slot is held for (ToR to PS and back)
}

// Cluster is racks of machines joined by an oversubscribed core.
type Cluster struct {
	Name     string
	Racks    []Rack
	Machines []Machine
	CoreGbps float64 // total core capacity each direction; every cross-rack stream crosses it once
}

// INAPeakBps is the peak INA rate of rack r's ToR in gradient bytes per second: memory / RTT,
// since a slot is held for about one round trip.
func (c *Cluster) INAPeakBps(r int) float64 {
	rk := &c.Racks[r]
	if rk.INAMemoryBytes <= 0 {
		return 0
	}
	return rk.INAMemoryBytes / rk.RTTSec
}

// TotalGPUs is the number of GPUs in the cluster.
func (c *Cluster) TotalGPUs() int {
	n := 0
	for i := range c.Machines {
		n += c.Machines[i].GPUs
	}
	return n
}

// Validate reports the first impossible value: zero or negative capacities, missing RTT where INA
// memory is set, racks that do not tile Machines.
func (c *Cluster) Validate() error {
	if len(c.Racks) == 0 {
		return fmt.Errorf("cluster %q: no racks", c.Name)
	}
	if !positive(c.CoreGbps) {
		return fmt.Errorf("cluster %q: core_gbps must be a positive number, got %v", c.Name, c.CoreGbps)
	}
	next := MachineID(0)
	for r := range c.Racks {
		rk := &c.Racks[r]
		switch {
		case rk.First != next || rk.Count <= 0:
			return fmt.Errorf("rack %d (%s): machines must be a positive count tiling the machine list", r, rk.Name)
		case !positive(rk.UplinkGbps):
			return fmt.Errorf("rack %d (%s): uplink_gbps must be a positive number, got %v", r, rk.Name, rk.UplinkGbps)
		case rk.INAMemoryBytes < 0 || math.IsNaN(rk.INAMemoryBytes) || math.IsInf(rk.INAMemoryBytes, 0):
			return fmt.Errorf("rack %d (%s): ina_memory_bytes must be >= 0, got %v", r, rk.Name, rk.INAMemoryBytes)
		case rk.INAMemoryBytes > 0 && !positive(rk.RTTSec):
			return fmt.Errorf("rack %d (%s): rtt_us must be positive when ina_memory_bytes is set, got %v s", r, rk.Name, rk.RTTSec)
		}
		next += MachineID(rk.Count)
	}
	if int(next) != len(c.Machines) {
		return fmt.Errorf("cluster %q: racks cover %d machines, machine list has %d", c.Name, next, len(c.Machines))
	}
	for i := range c.Machines {
		m := &c.Machines[i]
		rk := &c.Racks[m.Rack]
		if MachineID(i) < rk.First || MachineID(i) >= rk.First+MachineID(rk.Count) {
			return fmt.Errorf("machine %d: rack index %d does not contain it", i, m.Rack)
		}
		if m.GPUs <= 0 || m.GPUs > 1<<16 {
			return fmt.Errorf("machine %d (rack %s): gpus must be in 1..65536, got %d", i, rk.Name, m.GPUs)
		}
		if !positive(m.NICGbps) {
			return fmt.Errorf("machine %d (rack %s): nic_gbps must be a positive number, got %v", i, rk.Name, m.NICGbps)
		}
	}
	return nil
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// UniformSpec describes a cluster of identical racks; zero fields take the defaults of Uniform.
type UniformSpec struct {
	Racks, MachinesPerRack, GPUsPerMachine int
	NICGbps                                float64 // default 100
	Oversubscription                       float64 // rack NICs : uplink, default 2
	CoreOversubscription                   float64 // sum of uplinks : core, default 1
	INAMemoryBytes                         float64 // default one switch's slots: wire.NumSlots * wire.NumValues * 4
	RTTSec                                 float64 // default 20 µs
}

// Uniform builds racks x machines x GPUs with the given link ratios.
func Uniform(s UniformSpec) (*Cluster, error) {
	if s.Racks <= 0 || s.MachinesPerRack <= 0 || s.GPUsPerMachine <= 0 {
		return nil, fmt.Errorf("uniform cluster: racks, machines per rack and GPUs per machine must be positive, got %d x %d x %d",
			s.Racks, s.MachinesPerRack, s.GPUsPerMachine)
	}
	if s.Racks*s.MachinesPerRack > 1<<22 {
		return nil, fmt.Errorf("uniform cluster: %d machines is more than this engine supports (4M)", s.Racks*s.MachinesPerRack)
	}
	s = s.withDefaults()
	c := &Cluster{
		Name:     fmt.Sprintf("uniform-%dx%dx%d", s.Racks, s.MachinesPerRack, s.GPUsPerMachine),
		Machines: make([]Machine, 0, s.Racks*s.MachinesPerRack),
	}
	uplink := float64(s.MachinesPerRack) * s.NICGbps / s.Oversubscription
	c.CoreGbps = float64(s.Racks) * uplink / s.CoreOversubscription
	for r := 0; r < s.Racks; r++ {
		c.Racks = append(c.Racks, Rack{
			Name: fmt.Sprintf("r%d", r), First: MachineID(len(c.Machines)), Count: s.MachinesPerRack,
			UplinkGbps: uplink, INAMemoryBytes: s.INAMemoryBytes, RTTSec: s.RTTSec,
		})
		for m := 0; m < s.MachinesPerRack; m++ {
			c.Machines = append(c.Machines, Machine{Rack: r, GPUs: s.GPUsPerMachine, NICGbps: s.NICGbps})
		}
	}
	return c, c.Validate()
}

func (s UniformSpec) withDefaults() UniformSpec {
	if s.NICGbps == 0 {
		s.NICGbps = 100
	}
	if s.Oversubscription == 0 {
		s.Oversubscription = 2
	}
	if s.CoreOversubscription == 0 {
		s.CoreOversubscription = 1
	}
	if s.INAMemoryBytes == 0 {
		s.INAMemoryBytes = DefaultINAMemoryBytes
	}
	if s.RTTSec == 0 {
		s.RTTSec = DefaultRTTSec
	}
	return s
}

// DefaultINAMemoryBytes is the aggregator memory of one switch built from docs/protocol.md:
// NUM_SLOTS slots of NUM_VALUES 32-bit values.
const DefaultINAMemoryBytes = float64(wire.NumSlots * wire.NumValues * 4)

// DefaultRTTSec is the slot holding time assumed when a cluster file gives none: 20 µs, a ToR to
// PS round trip in one rack with kernel-bypass endpoints.
const DefaultRTTSec = 20e-6
