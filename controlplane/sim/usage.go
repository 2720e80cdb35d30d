package sim

import (
	"github.com/inapack/inapack/controlplane/netpack"
	"github.com/inapack/inapack/p4src/wire"
)

// usage integrates busy GPUs and link loads over time. Link loads are derived from the
// equilibrium rates with netpack's traffic model (README "Utilisation"): a rack's streams to a
// remote PS cross its uplink, the core and the PS rack's uplink once each, or once in all where
// its ToR aggregates them (the per-rack INA share is the job's INA rate split evenly over its INA
// racks, an approximation: netpack reports only the sum).
type usage struct {
	gpuBusy   float64   // GPUs busy now (kept by the simulator as jobs start and end)
	upLoad    []float64 // per rack; like netpack, one budget for both directions
	coreLoad  float64
	inaBps    float64 // gradient bytes/s aggregated in switches now
	gradBps   float64 // gradient bytes/s pushed by all workers now
	upCap     []float64
	coreCap   float64
	gpuSec    float64
	upSec     float64 // integral of mean over racks of load/cap
	coreSec   float64
	inaBytes  float64
	gradBytes float64
	elapsed   float64
}

func (u *usage) init(c *netpack.Cluster) {
	u.upLoad = make([]float64, len(c.Racks))
	u.upCap = make([]float64, len(c.Racks))
	for r := range c.Racks {
		u.upCap[r] = c.Racks[r].UplinkGbps * 1e9 / 8
	}
	u.coreCap = c.CoreGbps * 1e9 / 8
}

// bytes integrates the gradient counters over the whole run.
func (u *usage) bytes(dt float64) {
	u.inaBytes += u.inaBps * dt
	u.gradBytes += u.gradBps * dt
}

// charge integrates the utilisation counters (arrival window only).
func (u *usage) charge(dt float64) {
	u.elapsed += dt
	u.gpuSec += u.gpuBusy * dt
	var m float64
	for r := range u.upLoad {
		m += u.upLoad[r] / u.upCap[r]
	}
	u.upSec += m / float64(len(u.upLoad)) * dt
	u.coreSec += u.coreLoad / u.coreCap * dt
}

// rates recomputes the instantaneous link loads from the rates of the jobs that use the network.
func (u *usage) rates(c *netpack.Cluster, rs []*running) {
	u.coreLoad, u.inaBps, u.gradBps = 0, 0, 0
	clear(u.upLoad)
	for _, r := range rs {
		f := r.rate.FlowBps
		u.inaBps += r.rate.INABps
		p := &r.place
		psRack := c.Machines[p.PS].Rack
		// streams per rack, excluding a worker on the PS machine
		var racks []int
		var streams []int
		for _, w := range p.Workers {
			if w.Machine == p.PS {
				continue
			}
			u.gradBps += f
			rk := c.Machines[w.Machine].Rack
			if n := len(racks); n > 0 && racks[n-1] == rk {
				streams[n-1]++
			} else {
				racks = append(racks, rk)
				streams = append(streams, 1)
			}
		}
		nINA := 0
		for i, rk := range racks {
			if inaRack(c, p, rk, streams[i]) {
				nINA++
			}
		}
		for i, rk := range racks {
			if rk == psRack {
				continue
			}
			s := float64(streams[i])
			load := s * f
			if inaRack(c, p, rk, streams[i]) && nINA > 0 {
				agg := min(f, r.rate.INABps/float64(nINA))
				load = agg + s*(f-agg)
			}
			u.upLoad[rk] += load
			u.upLoad[psRack] += load
			u.coreLoad += load
		}
	}
}

// inaRack mirrors netpack's rule for where a ToR aggregates a job's streams.
func inaRack(c *netpack.Cluster, p *netpack.Placement, rack, streams int) bool {
	return p.INA && streams >= 2 && streams <= wire.MaxWorkers && c.Racks[rack].INAMemoryBytes > 0
}
