package sim

import (
	"github.com/inapack/inapack/netpack"
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
func (u *usage) rates(rs []*running) {
	u.coreLoad, u.inaBps, u.gradBps = 0, 0, 0
	clear(u.upLoad)
	for _, r := range rs {
		f := r.rate.FlowBps
		u.inaBps += r.rate.INABps
		u.gradBps += f * float64(r.traffic.streams)
		agg := 0.0
		if r.traffic.inaRacks > 0 {
			agg = min(f, r.rate.INABps/float64(r.traffic.inaRacks))
		}
		for _, rs := range r.traffic.remote {
			load := rs.n * f
			if rs.ina {
				load = agg + rs.n*(f-agg)
			}
			u.upLoad[rs.rack] += load
			u.upLoad[r.traffic.psRack] += load
			u.coreLoad += load
		}
	}
}

// traffic is the shape of a placement's gradient streams, computed once when the job starts.
type traffic struct {
	streams  int // worker machines other than the PS machine
	inaRacks int // racks whose ToR aggregates the job's streams
	psRack   int
	remote   []rackStreams // racks other than the PS rack, with their stream counts
}

type rackStreams struct {
	rack int
	n    float64
	ina  bool
}

// trafficOf mirrors netpack's traffic model: one stream per worker machine other than the PS
// machine; a ToR aggregates a job's streams when INA is on, it has INA memory and it sees
// between 2 and wire.MaxWorkers of them.
func trafficOf(c *netpack.Cluster, p *netpack.Placement) traffic {
	t := traffic{psRack: c.Machines[p.PS].Rack}
	var per []rackStreams
	for _, w := range p.Workers {
		if w.Machine == p.PS {
			continue
		}
		t.streams++
		rk := c.Machines[w.Machine].Rack
		if n := len(per); n > 0 && per[n-1].rack == rk {
			per[n-1].n++
		} else {
			per = append(per, rackStreams{rack: rk, n: 1})
		}
	}
	for _, rs := range per {
		rs.ina = p.INA && rs.n >= 2 && rs.n <= wire.MaxWorkers && c.Racks[rs.rack].INAMemoryBytes > 0
		if rs.ina {
			t.inaRacks++
		}
		if rs.rack != t.psRack {
			t.remote = append(t.remote, rs)
		}
	}
	return t
}
