package sim

import "github.com/inapack/inapack/netpack"

// usage integrates busy GPUs, link loads and aggregated chunks over time. Link loads are the
// network model's (packets/s over packets/s of capacity); an uplink's utilisation is the mean of
// its two directions.
type usage struct {
	gpuBusy   float64 // GPUs busy now (kept by the simulator as jobs start and end)
	upUtil    float64 // mean over racks of uplink load / capacity, now
	coreUtil  float64
	inaRate   float64 // chunks/s aggregated in switches now
	gradRate  float64 // chunks/s pushed by all workers now
	gpuSec    float64
	upSec     float64 // integral of upUtil
	coreSec   float64
	inaChunks float64
	grad      float64
	elapsed   float64
	racks     int
}

func (u *usage) init(c *netpack.Cluster) { u.racks = len(c.Racks) }

// bytes integrates the gradient counters over the whole run.
func (u *usage) bytes(dt float64) {
	u.inaChunks += u.inaRate * dt
	u.grad += u.gradRate * dt
}

// charge integrates the utilisation counters (arrival window only).
func (u *usage) charge(dt float64) {
	u.elapsed += dt
	u.gpuSec += u.gpuBusy * dt
	u.upSec += u.upUtil * dt
	u.coreSec += u.coreUtil * dt
}

// rates reads the instantaneous loads from the network model after a settle.
func (u *usage) rates(f *fluid, rs []*running) {
	u.upUtil, u.inaRate, u.gradRate = 0, 0, 0
	for r := 0; r < f.R; r++ {
		up, down := &f.res[f.up(r)], &f.res[f.down(r)]
		if up.cap > 0 {
			u.upUtil += (up.load/up.cap + down.load/down.cap) / 2 / float64(f.R)
		}
	}
	if c := &f.res[f.core()]; c.cap > 0 {
		u.coreUtil = c.load / c.cap
	}
	for _, r := range rs {
		pushed, agg := f.streamRates(r.job.ID)
		u.gradRate += pushed
		u.inaRate += agg
	}
}
