package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/p4src/wire"
)

// Cluster is what the scheduler places jobs on: the NetPack model of a topology.json and, for
// every machine of the model, the host behind it.
type Cluster struct {
	Topo  *topology.Topology
	Model *netpack.Cluster
	// Hosts[m] is the topology host of machine m.
	Hosts []string
	// ToR[m] is the switch machine m is linked to.
	ToR []string
	// ActiveSlots is the aggregator slots every switch offers (the ina settings' active_slots).
	ActiveSlots int
	machine     map[string]netpack.MachineID
}

// ClusterParams are the model inputs topology.json does not hold.
type ClusterParams struct {
	// DefaultMbps is the capacity of a link without a bandwidth element (default 1000 Mbit/s).
	DefaultMbps float64
	// RTT is how long a slot is held (default 1 ms): with ActiveSlots it gives a switch's INA
	// capacity, slots x 256 bytes / RTT.
	RTT time.Duration
}

const (
	defaultMbps = 1000
	defaultRTT  = time.Millisecond
)

// NewCluster builds the model of t: a rack per switch that has hosts with GPUs ("gpus" in
// topology.json), one machine per such host with its link's rate as NIC, each rack's links to
// other switches as its uplink, and a core as large as all uplinks together (a non-blocking
// spine). Hosts without GPUs are left out.
func NewCluster(t *topology.Topology, p ClusterParams) (*Cluster, error) {
	p.DefaultMbps = cmp.Or(p.DefaultMbps, defaultMbps)
	p.RTT = cmp.Or(p.RTT, defaultRTT)
	mbps := func(l topology.Link) float64 { return cmp.Or(l.Mbps, p.DefaultMbps) }
	c := &Cluster{Topo: t, Model: &netpack.Cluster{Name: "topology"}, machine: map[string]netpack.MachineID{},
		ActiveSlots: ActiveSlots(t)}
	tor := map[string]string{}     // host -> switch
	nic := map[string]float64{}    // host -> Mbit/s
	uplink := map[string]float64{} // switch -> Mbit/s towards other switches
	for _, l := range t.Links {
		a, _, err := t.ParseEndpoint(l.A)
		if err != nil {
			return nil, err
		}
		b, _, err := t.ParseEndpoint(l.B)
		if err != nil {
			return nil, err
		}
		_, aHost := t.Hosts[a]
		_, bHost := t.Hosts[b]
		switch {
		case aHost && bHost:
			return nil, fmt.Errorf("link %s-%s joins two hosts; hosts must hang off a switch", a, b)
		case aHost:
			tor[a], nic[a] = b, mbps(l)
		case bHost:
			tor[b], nic[b] = a, mbps(l)
		default:
			uplink[a] += mbps(l)
			uplink[b] += mbps(l)
		}
	}
	racks := map[string][]string{}
	for _, h := range slices.Sorted(maps.Keys(t.Hosts)) {
		if g := t.Hosts[h].GPUs; g > 0 {
			racks[tor[h]] = append(racks[tor[h]], h)
		} else if g < 0 {
			return nil, fmt.Errorf("host %s: gpus %d is negative", h, g)
		}
	}
	if len(racks) == 0 {
		return nil, fmt.Errorf(`no host has GPUs: give hosts "gpus": N in topology.json`)
	}
	var core float64
	for _, sw := range slices.Sorted(maps.Keys(racks)) {
		up := uplink[sw]
		if up == 0 {
			up = p.DefaultMbps // a lone switch: the uplink carries nothing
		}
		core += up
		rk := netpack.Rack{Name: sw, First: netpack.MachineID(len(c.Hosts)), Count: len(racks[sw]),
			UplinkGbps: up / 1000, RTTSec: p.RTT.Seconds(),
			INAMemoryBytes: float64(c.ActiveSlots * wire.NumValues * 4)}
		for _, h := range racks[sw] {
			c.machine[h] = netpack.MachineID(len(c.Hosts))
			c.Hosts = append(c.Hosts, h)
			c.ToR = append(c.ToR, sw)
			c.Model.Machines = append(c.Model.Machines, netpack.Machine{Rack: len(c.Model.Racks), GPUs: t.Hosts[h].GPUs,
				NICGbps: nic[h] / 1000})
		}
		c.Model.Racks = append(c.Model.Racks, rk)
	}
	c.Model.CoreGbps = core / 1000
	if err := c.Model.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ActiveSlots is the aggregator slots every switch of t offers: the ina settings' active_slots,
// else all of them.
func ActiveSlots(t *topology.Topology) int {
	if s := t.INA.Settings; s != nil && s.ActiveSlots != nil {
		return *s.ActiveSlots
	}
	return wire.NumSlots
}

// Machine returns the machine of a host.
func (c *Cluster) Machine(host string) (netpack.MachineID, bool) {
	m, ok := c.machine[host]
	return m, ok
}
