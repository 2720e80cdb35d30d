package netpack

import (
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

// A job's traffic in the estimator. Resource indices: NIC of machine m is m; uplink of rack r is
// M+r; the core is M+R; INA capacity of rack r's ToR is M+R+1+r (M machines, R racks).
type resIndex struct{ machines, racks int }

func (x resIndex) nic(m MachineID) int32 { return int32(m) }
func (x resIndex) uplink(r int) int32    { return int32(x.machines + r) }
func (x resIndex) core() int32           { return int32(x.machines + x.racks) }
func (x resIndex) ina(r int) int32       { return int32(x.machines + x.racks + 1 + r) }
func (x resIndex) isINA(res int32) bool  { return int(res) > x.machines+x.racks }
func (x resIndex) count() int            { return x.machines + 2*x.racks + 1 }

// use is the load a job puts on one resource as a function of its flow f (bytes/s per worker):
// kA*min(f, share) + kF*max(0, f-share), where share is the job's INA share at rack inaRack
// (+Inf while that ToR's INA capacity is not saturated, or when the use does not depend on INA).
// Aggregated traffic crosses a link once per rack (kA = 1); fallback traffic once per worker (kF = s).
type use struct {
	res     int32
	kA, kF  float64
	inaSlot int8 // index into the job's INA racks, -1 if the use does not depend on INA
}

// maxINARacks bounds the racks a job aggregates in; beyond it the extra racks run without INA.
const maxINARacks = 127

// buildUses derives a placement's uses and INA racks. Rules (README "Traffic model"):
// one stream per worker machine other than the PS machine; streams from rack R go to the PS machine
// through ToR R, the uplink of R, the core and the uplink of the PS rack when R differs from it;
// with INA, ToR R aggregates its s_R streams into one when 2 <= s_R <= wire.MaxWorkers and the ToR
// has INA memory.
func buildUses(c *Cluster, x resIndex, p *Placement) (uses []use, inaRacks []int) {
	ps := p.PS
	psRack := c.Machines[ps].Rack
	type rackStreams struct{ rack, s int }
	var per []rackStreams
	for _, w := range p.Workers {
		if w.Machine == ps {
			continue
		}
		uses = append(uses, use{res: x.nic(w.Machine), kA: 1, kF: 1, inaSlot: -1})
		r := c.Machines[w.Machine].Rack
		if n := len(per); n > 0 && per[n-1].rack == r {
			per[n-1].s++
		} else {
			per = append(per, rackStreams{r, 1})
		}
	}
	for _, rs := range per {
		s := float64(rs.s)
		u := use{kA: s, kF: s, inaSlot: -1}
		if p.INA && rs.s >= 2 && rs.s <= wire.MaxWorkers && c.Racks[rs.rack].INAMemoryBytes > 0 && len(inaRacks) < maxINARacks {
			u = use{kA: 1, kF: s, inaSlot: int8(len(inaRacks))}
			inaRacks = append(inaRacks, rs.rack)
			uses = append(uses, use{res: x.ina(rs.rack), kA: 1, kF: 0, inaSlot: u.inaSlot})
		}
		if rs.rack != psRack {
			for _, res := range [...]int32{x.uplink(rs.rack), x.core(), x.uplink(psRack)} {
				u.res = res
				uses = append(uses, u)
			}
		}
		u.res = x.nic(ps)
		uses = append(uses, u)
	}
	return uses, inaRacks
}

// load is the use's load at flow f given the job's INA shares.
func (u *use) load(f float64, shares []float64) float64 {
	sh := math.Inf(1)
	if u.inaSlot >= 0 {
		sh = shares[u.inaSlot]
	}
	if f <= sh {
		return u.kA * f
	}
	return u.kA*sh + u.kF*(f-sh)
}

// slope is d load / d f just above f.
func (u *use) slope(f float64, shares []float64) float64 {
	if u.inaSlot >= 0 && f >= shares[u.inaSlot] {
		return u.kF
	}
	return u.kA
}
