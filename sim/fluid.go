package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/p4src/wire"
)

// fluid is the flow-level network model (README "Network model"): per-job AIMD windows at their
// equilibrium (the square-root law of ECN-marked AIMD, solved with the network's marking and
// queueing as prices), directional links in packets per second, statistical sharing of ToR
// aggregator slots with collisions and ESA preemption falling back to the PS, slot hold times from
// RTT and queueing skew, per-packet costs of switch pipelines and PS hosts, and partial overlap of
// compute and communication. It is independent of netpack's estimator.
type fluid struct {
	c   *netpack.Cluster
	n   Network
	M   int
	R   int
	res []fres
	// inaUsers[r]: jobs aggregating at rack r's ToR.
	inaUsers [][]*fjob
	slots    []float64 // aggregator slots per ToR
	preempt  bool
	jobs     map[string]*fjob
	seq      int

	dirty     []*fjob  // added since the last settle
	freed     []int32  // resources of jobs removed since the last settle that were congested
	freedR    []int    // INA racks of removed jobs
	epoch     uint32   // component search
	inS       []uint32 // resource in the search set when == epoch
	rackIn    []uint32
	rest      []float64 // solveLink scratch
	sc        scratch
	linkIdx   []int32  // solve scratch: a resource's index in the component's links
	linkStamp []uint32 // solve scratch: linkIdx is valid when == stamp
	stamp     uint32
}

type resKind uint8

const (
	kTx     resKind = iota // host NIC, host -> ToR
	kRx                    // host NIC, ToR -> host
	kUp                    // ToR -> core
	kDown                  // core -> ToR
	kCore                  // the core (big switch): every packet crossing racks enters it once
	kSwitch                // a ToR pipeline's packet rate (SwitchPacketSec)
	kPS                    // a PS host's packet processing (PSPacketSec)
)

var kindName = [...]string{"nic-tx", "nic-rx", "uplink-up", "uplink-down", "core", "switch", "ps-cpu"}

type fres struct {
	kind  resKind
	id    int     // machine or rack
	cap   float64 // packets/s; 0: not modelled (no limit)
	users []*fjob
	z     float64 // congestion price: see fluid.rate
	load  float64 // packets/s at the last solution
}

type fjob struct {
	id     string
	seq    int
	p      netpack.Placement
	m      netpack.Model
	dcap   float64 // compute-bound chunk rate per stream (DemandBps / ChunkBytes; +Inf without overlap)
	wcap   float64 // window (chunks in flight)
	slotLo float64 // first slot of its range; < 0: spread uniformly over the ToR's slots
	groups []fgroup
	uses   []fuse
	inaAt  []int // groups aggregating, by index into groups

	x, lam    float64 // chunk rate per stream while sending; average chunk rate per stream
	pz        float64 // its price sum (see rate), kept up to date by the solver
	burst     float64 // most chunks/s per stream its own packets fit through every resource (while it sends)
	burstAt   int32   // the resource that sets burst
	links     []int   // solve scratch: indexes of its resources in the component
	lpos      []int32 // solve scratch: its entry in each of those resources' user lists
	rtt       float64
	bneck     string
	seen      uint32
	solvedAt  uint32
	collMoved bool // its slot collisions moved in the last collisions round
}

// fgroup is the job's streams from one rack.
type fgroup struct {
	rack   int
	s      float64 // streams (worker machines other than the PS machine)
	ina    bool
	base   float64             // base RTT of this group's path
	ms     []netpack.MachineID // worker machines
	kAfter float64             // packets per chunk after the ToR: 1 aggregated, s collided, (s+1)/2 evicted
	agg    float64             // fraction of chunks aggregated
	coll   float64             // fraction that found the slot held (fell back to the PS)
	hold   float64             // seconds a chunk holds its slot
}

// fuse is a job's load on a resource, in packets per chunk of one stream: c + mult x kAfter of
// group g (pushes after the ToR depend on how much the ToR aggregated; results do not).
type fuse struct {
	res  int32
	g    int
	c    float64
	mult float64
}

func (j *fjob) coef(u *fuse) float64 {
	if u.mult == 0 {
		return u.c
	}
	return u.c + u.mult*j.groups[u.g].kAfter
}

// Resource indices: NIC tx/rx of machine m, uplink up/down of rack r, the core, ToR pipeline of
// rack r, PS host m.
func (f *fluid) tx(m netpack.MachineID) int32 { return int32(m) }
func (f *fluid) rx(m netpack.MachineID) int32 { return int32(f.M + int(m)) }
func (f *fluid) up(r int) int32               { return int32(2*f.M + r) }
func (f *fluid) down(r int) int32             { return int32(2*f.M + f.R + r) }
func (f *fluid) core() int32                  { return int32(2*f.M + 2*f.R) }
func (f *fluid) sw(r int) int32               { return int32(2*f.M + 2*f.R + 1 + r) }
func (f *fluid) cpu(m netpack.MachineID) int32 {
	return int32(2*f.M + 3*f.R + 1 + int(m))
}

func newFluid(c *netpack.Cluster, n Network) *fluid {
	n = n.withDefaults()
	f := &fluid{c: c, n: n, M: len(c.Machines), R: len(c.Racks), jobs: map[string]*fjob{},
		inaUsers: make([][]*fjob, len(c.Racks)), slots: make([]float64, len(c.Racks)),
		preempt: n.Slots.Sharing() == netpack.PriorityShare}
	f.res = make([]fres, 3*f.M+3*f.R+1)
	f.inS = make([]uint32, len(f.res))
	f.linkIdx = make([]int32, len(f.res))
	f.linkStamp = make([]uint32, len(f.res))
	f.rackIn = make([]uint32, f.R)
	pkt := func(gbps float64) float64 { return gbps * 1e9 / 8 / n.PacketBytes }
	set := func(i int32, k resKind, id int, capPkts float64) {
		f.res[i] = fres{kind: k, id: id, cap: capPkts}
	}
	for i := range c.Machines {
		m := netpack.MachineID(i)
		set(f.tx(m), kTx, i, pkt(c.Machines[i].NICGbps))
		set(f.rx(m), kRx, i, pkt(c.Machines[i].NICGbps))
		if n.PSPacketSec > 0 {
			set(f.cpu(m), kPS, i, 1/n.PSPacketSec)
		}
	}
	for r := range c.Racks {
		set(f.up(r), kUp, r, pkt(c.Racks[r].UplinkGbps))
		set(f.down(r), kDown, r, pkt(c.Racks[r].UplinkGbps))
		if n.SwitchPacketSec > 0 {
			set(f.sw(r), kSwitch, r, 1/n.SwitchPacketSec)
		}
		f.slots[r] = math.Floor(c.Racks[r].INAMemoryBytes / n.ChunkBytes)
	}
	set(f.core(), kCore, 0, pkt(c.CoreGbps))
	return f
}

// add starts a job that uses the network (window 0: the network's; slotLo < 0: slots spread
// over the whole pool). Its rate is known after the next settle.
func (f *fluid) add(p netpack.Placement, window, slotLo float64) error {
	if _, dup := f.jobs[p.Job.ID]; dup {
		return fmt.Errorf("job %s is already running", p.Job.ID)
	}
	if window <= 0 {
		window = f.n.Window
	}
	j := &fjob{id: p.Job.ID, seq: f.seq, p: p, m: p.Job.Model, wcap: window, slotLo: slotLo, burst: math.Inf(1),
		dcap: p.Job.Model.DemandBps() / f.n.ChunkBytes}
	f.seq++
	f.build(j)
	if len(j.groups) == 0 {
		return fmt.Errorf("job %s uses no network (a worker only on its PS machine)", p.Job.ID)
	}
	f.jobs[j.id] = j
	seen := map[int32]bool{}
	for _, u := range j.uses {
		if !seen[u.res] {
			seen[u.res] = true
			f.res[u.res].users = append(f.res[u.res].users, j)
		}
	}
	for _, gi := range j.inaAt {
		r := j.groups[gi].rack
		f.inaUsers[r] = append(f.inaUsers[r], j)
	}
	f.dirty = append(f.dirty, j)
	return nil
}

// remove ends a job; its resources are re-solved at the next settle.
func (f *fluid) remove(id string) bool {
	j, ok := f.jobs[id]
	if !ok {
		return false
	}
	delete(f.jobs, id)
	j.solvedAt = 0
	for _, u := range j.uses {
		f.res[u.res].load -= j.coef(&u) * j.lam
	}
	seen := map[int32]bool{}
	for _, u := range j.uses {
		if seen[u.res] {
			continue
		}
		seen[u.res] = true
		r := &f.res[u.res]
		r.users = slices.DeleteFunc(r.users, func(k *fjob) bool { return k == j })
		r.load = math.Max(0, r.load)
		if len(r.users) == 0 {
			r.z, r.load = 0, 0
		} else if r.z > 0 {
			f.freed = append(f.freed, u.res)
		}
	}
	for _, gi := range j.inaAt {
		r := j.groups[gi].rack
		f.inaUsers[r] = slices.DeleteFunc(f.inaUsers[r], func(k *fjob) bool { return k == j })
		f.freedR = append(f.freedR, r)
	}
	f.dirty = slices.DeleteFunc(f.dirty, func(k *fjob) bool { return k == j })
	return true
}

// build derives a job's stream groups and resource uses from its placement (README "Network
// model": pushes go worker -> ToR -> (core) -> PS; results come back the mirrored way, one copy
// per rack, replicated by the switches; a ToR aggregates a rack's 2..32 streams when INA is on).
func (f *fluid) build(j *fjob) {
	c, n := f.c, &f.n
	ps := j.p.PS
	pr := c.Machines[ps].Rack
	byRack := map[int]int{}
	for _, w := range j.p.Workers {
		if w.Machine == ps {
			continue
		}
		r := c.Machines[w.Machine].Rack
		gi, ok := byRack[r]
		if !ok {
			gi = len(j.groups)
			byRack[r] = gi
			base := math.Max(c.Racks[r].RTTSec, c.Racks[pr].RTTSec)
			if base <= 0 {
				base = netpack.DefaultRTTSec
			}
			if r != pr {
				base += n.CoreRTTSec
			}
			j.groups = append(j.groups, fgroup{rack: r, base: base, agg: 1, kAfter: 1})
		}
		g := &j.groups[gi]
		g.s++
		g.ms = append(g.ms, w.Machine)
	}
	if len(j.groups) == 0 {
		return
	}
	push := func(r int32, g int, c, mult float64) {
		if f.res[r].cap > 0 {
			j.uses = append(j.uses, fuse{res: r, g: g, c: c, mult: mult})
		}
	}
	result := func(r int32) {
		if f.res[r].cap > 0 {
			j.uses = append(j.uses, fuse{res: r, g: -1, c: 1})
		}
	}
	result(f.tx(ps))  // one result per chunk, replicated by the switch
	result(f.sw(pr))  // the result enters the PS's ToR
	result(f.cpu(ps)) // the PS sends it
	for gi := range j.groups {
		g := &j.groups[gi]
		g.ina = j.p.INA && g.s >= 2 && g.s <= wire.MaxWorkers && f.slots[g.rack] >= 1
		if g.ina {
			j.inaAt = append(j.inaAt, gi)
		} else {
			g.kAfter, g.agg = g.s, 0
		}
		for _, m := range g.ms {
			push(f.tx(m), -1, 1, 0)
			result(f.rx(m))
		}
		push(f.sw(g.rack), -1, g.s, 0)
		push(f.rx(ps), gi, 0, 1)
		push(f.cpu(ps), gi, 0, 1)
		if g.rack != pr {
			for _, r := range []int32{f.up(g.rack), f.core(), f.down(pr), f.sw(pr)} {
				push(r, gi, 0, 1)
			}
			for _, r := range []int32{f.up(pr), f.core(), f.down(g.rack), f.sw(g.rack)} {
				result(r) // the result copy for this rack
			}
		}
		if g.ina {
			// Chunks in flight map to distinct slots of the job's range, which fits the pool.
			j.wcap = math.Min(j.wcap, f.slots[g.rack])
		}
	}
}

// Congestion model. Every resource has a price z >= 0, which is what congestion control reacts
// to. With ECN (the default), z is the marking rate of the port per packet crossing it and every
// job's window follows the square-root law of AIMD in its chunks' marking rate P = Σ k z over the
// resources it crosses (k packets of one chunk there): window = sqrt(3/(2P)) chunks, rate =
// window / RTT. Resources that are not ECN ports (host NIC transmit, switch pipeline, PS host) and
// result packets (only data packets are marked) are priced the same way: their queue delays the
// job's results, and its window backs off as if marked (an approximation that keeps the
// equilibrium unique). RTT is the path's base RTT: the queue a marking port keeps (below its
// threshold) is not added. With ECNOff nothing marks: z is a queueing delay in seconds, windows
// stay full, and jobs share by RTT (rate = window / (RTT + Σ z)).
func (f *fluid) rate(j *fjob) {
	rtt := 0.0
	for gi := range j.groups {
		rtt = math.Max(rtt, j.groups[gi].base)
	}
	pz := 0.0
	if f.n.ECNOff {
		for i, u := range j.uses {
			if !slices.ContainsFunc(j.uses[:i], func(v fuse) bool { return v.res == u.res }) {
				pz += f.res[u.res].z
			}
		}
	} else {
		for u := range j.uses {
			pz += j.coef(&j.uses[u]) * f.res[j.uses[u].res].z
		}
	}
	j.pz = pz
	f.setRate(j, rtt, pz)
}

// setRate is the equilibrium rate for a round trip rtt and a price sum pz (marking: Σ k z;
// delay: Σ z), at most the job's window per RTT, the rate compute produces gradients at, and the
// rate at which its own packets, all sent at once by its synchronised workers, fit each resource;
// lam is the time mean over the iteration (partial overlap: links carry the mean, as the bursts
// of different jobs interleave).
func (f *fluid) setRate(j *fjob, rtt, pz float64) {
	// (builtin min and max: this is the simulator's innermost loop)
	x := min(j.dcap, j.burst, j.wcap/rtt)
	switch {
	case f.n.ECNOff:
		x = min(j.dcap, j.burst, j.wcap/(rtt+pz))
	case pz > 0:
		x = min(x, aimdK/(rtt*math.Sqrt(pz)))
	}
	j.x, j.rtt = x, rtt
	// One gradient per iteration of ForwardSec + max(backward, G/x).
	j.lam = j.m.GradientBytes / f.n.ChunkBytes / f.iterTime(j, x)
}

// aimdK is the square-root law's constant for periodic halving (Mathis et al., CCR 1997).
var aimdK = math.Sqrt(1.5)

func (f *fluid) iterTime(j *fjob, x float64) float64 {
	fwd := j.m.ForwardSec
	return fwd + max(j.m.ComputeSec-fwd, j.m.GradientBytes/(x*f.n.ChunkBytes))
}
