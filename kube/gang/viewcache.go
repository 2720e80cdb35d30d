package gang

import (
	"maps"
	"slices"
	"sync"
	"unsafe"

	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/netpack"
)

// ViewCache is the extender's view (the plugin's is Live, fed by informer events): it makes the
// Views NewView makes without rebuilding, gang after gang, what did not
// change: at 10,000 nodes NewView costs several times NetPack's own placement. The part that
// depends on the nodes only (racks, machines, their GPUs and NICs) is rebuilt when a node comes
// or goes or its rack label, allocatable GPUs or NIC annotation changes; what a View takes from a
// pod is read once per pod object, and a running gang's placement is made again only when its
// set of pod objects changes. The informers hand out the same object until it is updated, so an
// object seen before is not looked at again.
type ViewCache struct {
	mu    sync.Mutex
	cfg   Config
	base  *View                // NewView of the nodes without pods
	facts map[string]nodeFacts // node name -> what base was built from
	seen  map[*v1.Node]bool    // node objects whose facts match

	pods    map[*v1.Pod]*podFacts // for base
	gangIdx map[Key]int
	gangs   []gangCache // by gangIdx
}

// podFacts is what a View takes from a pod.
type podFacts struct {
	gang     int // gangIdx; -1: a pod of no gang
	skip     bool
	terminal bool
	machine  netpack.MachineID // -1: not on a machine of base
	ps       bool
	gpus     int
	model    netpack.Model
	ina      bool
}

// gangCache is a running gang's placement and the pods it was made from, and this View's
// accumulation of its pods.
type gangCache struct {
	sig, cur  gangSig
	placement netpack.Placement
	ok        bool
	pods      []*podFacts
	// objs are sig's pods, kept alive so that no other pod takes their addresses; curObjs cur's.
	objs, curObjs []*v1.Pod
}

// gangSig identifies a set of pod objects (and which came first, whose model and INA count).
type gangSig struct {
	first    *v1.Pod
	xor, sum uintptr
	n        int
	touched  bool
}

// nodeFacts is what a View takes from a node.
type nodeFacts struct {
	rack, nic string
	gpus      int
}

func factsOf(n *v1.Node) nodeFacts {
	return nodeFacts{rack: n.Labels[RackLabel], nic: n.Annotations[NICAnnotation], gpus: GPUs(n.Status.Allocatable)}
}

// View is NewView(cfg, nodes, assigned), the nodes' part from the cache.
func (c *ViewCache) View(cfg Config, nodes []*v1.Node, assigned []*v1.Pod) (*View, error) {
	cfg = cfg.WithDefaults()
	c.mu.Lock()
	if !c.current(cfg, nodes) {
		base, err := NewView(cfg, nodes, nil)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.cfg, c.base, c.facts, c.seen = cfg, base, map[string]nodeFacts{}, map[*v1.Node]bool{}
		c.pods, c.gangIdx, c.gangs = map[*v1.Pod]*podFacts{}, map[Key]int{}, nil
		for _, n := range nodes {
			c.facts[n.Name] = factsOf(n)
			c.seen[n] = true
		}
	}
	defer c.mu.Unlock()

	// The maps and node names are shared read-only with every View of this base; the machines'
	// GPUs are each View's own (pods of no gang take theirs off).
	base := c.base
	cl := *base.Cluster
	cl.Machines = slices.Clone(base.Cluster.Machines)
	v := &View{Cluster: &cl, Nodes: base.Nodes, Machine: base.Machine, Unlabelled: base.Unlabelled, Running: map[Key]netpack.Placement{}}
	if len(c.pods) > 2*len(assigned)+1024 {
		c.pods = map[*v1.Pod]*podFacts{} // old objects of updated or deleted pods
	}
	for _, p := range assigned {
		f := c.podFacts(p)
		if f.gang < 0 {
			if !f.terminal && f.machine >= 0 {
				cl.Machines[f.machine].GPUs = max(cl.Machines[f.machine].GPUs-f.gpus, 0)
			}
			continue
		}
		if f.skip || f.machine < 0 {
			continue
		}
		g := &c.gangs[f.gang]
		if !g.cur.touched {
			g.cur = gangSig{first: p, touched: true}
			g.pods, g.curObjs = g.pods[:0], g.curObjs[:0]
		}
		g.cur.xor ^= uintptr(unsafe.Pointer(p))
		g.cur.sum += uintptr(unsafe.Pointer(p))
		g.cur.n++
		g.pods = append(g.pods, f)
		g.curObjs = append(g.curObjs, p)
	}
	keys := make([]Key, len(c.gangIdx))
	for k, i := range c.gangIdx {
		keys[i] = k
	}
	for i := range c.gangs {
		g := &c.gangs[i]
		if !g.cur.touched {
			continue
		}
		if g.cur != g.sig {
			g.sig, g.objs = g.cur, slices.Clone(g.curObjs)
			g.placement, g.ok = placementOf(keys[i], g.pods)
		}
		g.cur = gangSig{}
		if g.ok {
			v.Running[keys[i]] = g.placement
		}
	}
	return v, nil
}

// podFacts are p's facts, read once per pod object.
func (c *ViewCache) podFacts(p *v1.Pod) *podFacts {
	if f, ok := c.pods[p]; ok {
		return f
	}
	f := &podFacts{gang: -1, machine: -1, terminal: terminal(p), skip: terminal(p) || p.DeletionTimestamp != nil,
		ps: p.Labels[RoleLabel] == RolePS, gpus: PodGPUs(p), ina: p.Annotations[INAAnnotation] != "false"}
	if m, ok := c.base.Machine[p.Spec.NodeName]; ok {
		f.machine = m
	}
	if k, ok := KeyOf(p); ok {
		i, ok := c.gangIdx[k]
		if !ok {
			i = len(c.gangs)
			c.gangIdx[k] = i
			c.gangs = append(c.gangs, gangCache{})
		}
		f.gang = i
		f.model, _ = ModelOf(p) // a pod with a bad model was never planned; take the default
	}
	c.pods[p] = f
	return f
}

// placementOf is a running gang's placement from its pods on machines, as View.running makes it:
// workers' GPUs on their machines, the PS on its pod's machine (else the machine with most of the
// job's GPUs), model and INA from the first pod; false while only its PS is placed.
func placementOf(k Key, pods []*podFacts) (netpack.Placement, bool) {
	gpus := map[netpack.MachineID]int{}
	ps := netpack.MachineID(-1)
	for _, f := range pods {
		if f.ps {
			ps = f.machine
			continue
		}
		gpus[f.machine] += f.gpus
	}
	pl := netpack.Placement{INA: pods[0].ina, PS: ps}
	total, best := 0, netpack.MachineID(-1)
	for _, m := range slices.Sorted(maps.Keys(gpus)) {
		if gpus[m] == 0 {
			continue
		}
		pl.Workers = append(pl.Workers, netpack.Worker{Machine: m, GPUs: gpus[m]})
		total += gpus[m]
		if best < 0 || gpus[m] > gpus[best] {
			best = m
		}
	}
	if total == 0 {
		return pl, false
	}
	if pl.PS < 0 {
		pl.PS = best
	}
	pl.Job = &netpack.Job{ID: k.String(), GPUs: total, Model: pods[0].model, Iterations: 1}
	return pl, true
}

// current: the cached base was built with cfg from nodes as they are now.
func (c *ViewCache) current(cfg Config, nodes []*v1.Node) bool {
	if c.base == nil || cfg != c.cfg || len(nodes) != len(c.facts) {
		return false
	}
	if len(c.seen) > 2*len(nodes) {
		c.seen = map[*v1.Node]bool{} // old objects of updated nodes
	}
	for _, n := range nodes {
		if c.seen[n] {
			continue
		}
		if f, ok := c.facts[n.Name]; !ok || f != factsOf(n) {
			return false
		}
		c.seen[n] = true
	}
	return true
}
