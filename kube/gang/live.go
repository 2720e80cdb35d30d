package gang

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/inapack/inapack/netpack"
)

// Live is the cluster as NetPack sees it, kept up to date by the scheduler's node and pod
// informers (as the framework's own cache is) and by the plugin's Reserve and Unreserve (pods
// assumed on a node before they are bound): each event changes only what it touches, so that a
// gang's View costs a copy of the machines' free GPUs and one pass of the gang's node constraints
// over the nodes, not a pass over every pod of the cluster. The layout (racks, machines, their
// order) is rebuilt only when a node comes or goes, its rack label, NIC annotation or allocatable
// GPUs change, or pods of no gang take a node's last GPU or give one back; a running gang's
// placement is made again only when one of its pods changes.
type Live struct {
	cfg Config

	mu     sync.Mutex
	nodes  map[string]*liveNode
	pods   map[types.UID]*livePod // pods bound or assumed on a node
	gangs  map[Key]*liveGang
	dirty  map[Key]bool        // gangs whose placement is to be made again
	stale  bool                // the layout is to be rebuilt
	base   *View               // the layout; its machines' GPUs are what pods of no gang leave
	byM    []*liveNode         // base's machine -> node
	err    error               // the layout's (a bad NIC annotation, no node with GPUs)
	sorted []netpack.Placement // base.Running's placements by job ID
	synced []cache.InformerSynced
	// gen counts the changes of base's machines (a rebuild, a machine's GPUs).
	gen     uint64
	planner *planner
}

// liveNode is a node and what the pods on it take of it. Pods may come before their node (the
// informers are two) and stay after it: the entry lives while either does.
type liveNode struct {
	name      string
	node      *v1.Node // nil: no such node (now)
	rack, nic string
	gpus      int
	// allocCPU and allocMem are the node's allocatable milli-CPU and bytes.
	allocCPU, allocMem int64
	pods               int  // pods counted on it
	plain              bool // neither cordoned nor tainted (plain)
	// other is the GPUs of pods of no gang on it, inGang those of gangs' pods; cpu and mem the
	// requests of all its pods (terminal ones aside, as FreeOf).
	other, inGang int
	cpu, mem      int64
}

// livePod is what the view takes from a pod on a node.
type livePod struct {
	name     string // namespace/name, to pick a gang's pod in a stable order
	node     string
	key      Key
	inGang   bool
	terminal bool
	deleting bool
	assumed  bool // on node by Reserve, not (yet) by the API
	ps, ina  bool
	gpus     int
	model    netpack.Model
	cpu, mem int64
}

// liveGang is a running gang: its pods on nodes and their placement.
type liveGang struct {
	pods      map[types.UID]*livePod
	placement netpack.Placement
	ok        bool
}

// NewLive is an empty view with cfg; Register feeds it.
func NewLive(cfg Config) *Live {
	return &Live{cfg: cfg.WithDefaults(), nodes: map[string]*liveNode{}, pods: map[types.UID]*livePod{},
		gangs: map[Key]*liveGang{}, dirty: map[Key]bool{}, stale: true}
}

// Register adds the view's event handlers to the node and pod informers (before they start, or
// after: an informer replays its objects to a new handler).
func (l *Live) Register(nodes, pods cache.SharedIndexInformer) error {
	rn, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.setNode(o) },
		UpdateFunc: func(_, o any) { l.setNode(o) },
		DeleteFunc: func(o any) { l.deleteNode(o) },
	})
	if err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	rp, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.setPod(o) },
		UpdateFunc: func(_, o any) { l.setPod(o) },
		DeleteFunc: func(o any) { l.deletePod(o) },
	})
	if err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	l.synced = []cache.InformerSynced{rn.HasSynced, rp.HasSynced}
	return nil
}

// Synced: both informers have handed the view every object they had at start.
func (l *Live) Synced() bool {
	for _, s := range l.synced {
		if !s() {
			return false
		}
	}
	return true
}

func tombstone(o any) any {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return o
}

func (l *Live) setNode(o any) {
	if n, ok := o.(*v1.Node); ok {
		l.SetNode(n)
	}
}

func (l *Live) deleteNode(o any) {
	if n, ok := tombstone(o).(*v1.Node); ok {
		l.DeleteNode(n.Name)
	}
}

func (l *Live) setPod(o any) {
	if p, ok := o.(*v1.Pod); ok {
		l.SetPod(p)
	}
}

func (l *Live) deletePod(o any) {
	if p, ok := tombstone(o).(*v1.Pod); ok {
		l.DeletePod(p.UID)
	}
}

// SetNode is a node added or updated.
func (l *Live) SetNode(n *v1.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.entry(n.Name)
	rack, nic, gpus := n.Labels[RackLabel], n.Annotations[NICAnnotation], GPUs(n.Status.Allocatable)
	if ln.node == nil || ln.rack != rack || ln.nic != nic || ln.gpus != gpus {
		l.stale = true
	}
	ln.node, ln.rack, ln.nic, ln.gpus = n, rack, nic, gpus
	ln.allocCPU, ln.allocMem = n.Status.Allocatable.Cpu().MilliValue(), n.Status.Allocatable.Memory().Value()
	ln.plain = plain(n)
}

// entry is the node called name, made if need be (under mu).
func (l *Live) entry(name string) *liveNode {
	ln := l.nodes[name]
	if ln == nil {
		ln = &liveNode{name: name}
		l.nodes[name] = ln
	}
	return ln
}

// DeleteNode is a node gone. Its pods stay until their own delete events (as the API has them).
func (l *Live) DeleteNode(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.nodes[name]; n != nil && n.node != nil {
		n.node = nil
		if n.pods == 0 {
			delete(l.nodes, name)
		}
		l.stale = true
	}
}

// SetPod is a pod added or updated: counted where it is bound, or where Reserve assumed it while
// the API shows it on no node yet (the plan's annotations are written onto a pod before its bind).
func (l *Live) SetPod(p *v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	node := p.Spec.NodeName
	if old := l.pods[p.UID]; node == "" && old != nil && old.assumed {
		node = old.node
	}
	if node == "" {
		l.remove(p.UID)
		return
	}
	l.put(p, node, p.Spec.NodeName == "")
}

// Assume is Reserve's: pod is on node from now, until the API binds it there (SetPod) or
// Unreserve forgets it (Forget). A pod the API shows bound is left as it is.
func (l *Live) Assume(p *v1.Pod, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.pods[p.UID]; old != nil && !old.assumed {
		return
	}
	l.put(p, node, true)
}

// Forget is Unreserve's: the pod assumed on a node is on none (unless the API has bound it).
func (l *Live) Forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.pods[uid]; old != nil && old.assumed {
		l.remove(uid)
	}
}

// DeletePod is a pod gone.
func (l *Live) DeletePod(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.remove(uid)
}

// put counts p on node (under mu), in place of what it counted before.
func (l *Live) put(p *v1.Pod, node string, assumed bool) {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	f := &livePod{name: p.Namespace + "/" + p.Name, node: node, terminal: terminal(p), deleting: p.DeletionTimestamp != nil,
		assumed: assumed, ps: p.Labels[RoleLabel] == RolePS, ina: p.Annotations[INAAnnotation] != "false", gpus: PodGPUs(p),
		cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()}
	f.key, f.inGang = KeyOf(p)
	if f.inGang {
		f.model, _ = ModelOf(p) // a pod with a bad model was never planned; take the default
	}
	if old := l.pods[p.UID]; old != nil && *old == *f {
		return // most updates (status, conditions) change nothing the view counts
	}
	l.remove(p.UID)
	l.pods[p.UID] = f
	l.count(p.UID, f, 1)
}

// remove uncounts a pod (under mu).
func (l *Live) remove(uid types.UID) {
	if f := l.pods[uid]; f != nil {
		l.count(uid, f, -1)
		delete(l.pods, uid)
	}
}

// count adds (sign 1) or takes off (-1) what f holds of its node and gang.
func (l *Live) count(uid types.UID, f *livePod, sign int) {
	n := l.entry(f.node)
	n.pods += sign
	if !f.terminal {
		n.cpu += int64(sign) * f.cpu
		n.mem += int64(sign) * f.mem
		if f.inGang {
			n.inGang += sign * f.gpus
		} else if f.gpus != 0 {
			before := n.gpus - n.other
			n.other += sign * f.gpus
			l.freeChanged(n, before)
		}
	}
	if n.pods == 0 && n.node == nil {
		delete(l.nodes, f.node)
	}
	if !f.inGang {
		return
	}
	g := l.gangs[f.key]
	if g == nil {
		g = &liveGang{pods: map[types.UID]*livePod{}}
		l.gangs[f.key] = g
	}
	if sign > 0 {
		g.pods[uid] = f
	} else {
		delete(g.pods, uid)
	}
	l.dirty[f.key] = true
}

// freeChanged updates the layout's machine of n after pods of no gang changed its GPUs from
// before: in place, unless n becomes a machine or stops being one.
func (l *Live) freeChanged(n *liveNode, before int) {
	now := n.gpus - n.other
	if l.stale || l.base == nil || n.node == nil {
		return
	}
	if (before > 0) != (now > 0) {
		l.stale = true
		return
	}
	if m, ok := l.base.Machine[n.name]; ok {
		l.base.Cluster.Machines[m].GPUs = now
		l.gen++ // the planner's cluster is not the cluster any more
	}
}

// rebuild makes the layout anew from the nodes (under mu); every running gang's placement is
// made again on it.
func (l *Live) rebuild() {
	nodes := make([]*v1.Node, 0, len(l.nodes))
	other := map[string]int{}
	for name, n := range l.nodes {
		if n.node == nil {
			continue
		}
		nodes = append(nodes, n.node)
		if n.other != 0 {
			other[name] = n.other
		}
	}
	l.base, l.err = layout(l.cfg, nodes, other)
	l.stale = false
	l.byM, l.sorted, l.planner = nil, nil, nil
	l.gen++
	if l.err != nil {
		return
	}
	for _, name := range l.base.Nodes {
		l.byM = append(l.byM, l.nodes[name])
	}
	for k := range l.gangs {
		l.dirty[k] = true
	}
}

// refresh brings the running gangs' placements up to date (under mu): in place in the Running
// map and the sorted list Views share, and in the planner's state.
func (l *Live) refresh() {
	if len(l.dirty) == 0 {
		return
	}
	running := l.base.Running
	byID := func(p netpack.Placement, id string) int { return strings.Compare(p.Job.ID, id) }
	for k := range l.dirty {
		id := k.String()
		old, had := running[k]
		g := l.gangs[k]
		var now netpack.Placement
		ok := false
		if g != nil && len(g.pods) > 0 {
			now, ok = l.placementOf(k, g)
		}
		if had && ok && samePlacement(old, now) {
			continue // a pod's update that changes nothing NetPack sees: the kept placer keeps its job
		}
		if had {
			delete(running, k)
			if i, ok := slices.BinarySearchFunc(l.sorted, id, byID); ok {
				l.sorted = slices.Delete(l.sorted, i, i+1)
			}
			l.planner.remove(id)
		}
		if g == nil {
			continue
		}
		if len(g.pods) == 0 {
			delete(l.gangs, k)
			continue
		}
		g.placement, g.ok = now, ok
		if g.ok {
			running[k] = g.placement
			i, _ := slices.BinarySearchFunc(l.sorted, id, byID)
			l.sorted = slices.Insert(l.sorted, i, g.placement)
			l.planner.add(g.placement)
		}
	}
	clear(l.dirty)
}

func samePlacement(a, b netpack.Placement) bool {
	return a.PS == b.PS && a.INA == b.INA && a.Priority == b.Priority && *a.Job == *b.Job && slices.Equal(a.Workers, b.Workers)
}

// placementOf is a running gang's placement from its pods on machines, as View.running makes it:
// workers' GPUs on their machines, the PS on its pod's machine (else the machine with most of the
// job's GPUs), model and INA from its PS (else its first pod by name); false while only its PS
// is placed.
func (l *Live) placementOf(k Key, g *liveGang) (netpack.Placement, bool) {
	gpus := map[netpack.MachineID]int{}
	ps := netpack.MachineID(-1)
	var first *livePod
	for _, f := range g.pods {
		if f.terminal || f.deleting {
			continue
		}
		m, ok := l.base.Machine[f.node]
		if !ok {
			continue // a node without GPUs: no gradient stream NetPack models
		}
		if first == nil || (f.ps && !first.ps) || (f.ps == first.ps && f.name < first.name) {
			first = f
		}
		if f.ps {
			ps = m
			continue
		}
		gpus[m] += f.gpus
	}
	if first == nil {
		return netpack.Placement{}, false
	}
	pl := netpack.Placement{INA: first.ina, PS: ps}
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
	pl.Job = &netpack.Job{ID: k.String(), GPUs: total, Model: first.model, Iterations: 1}
	return pl, true
}

// View is the cluster for gang g (nil: every node is a machine): the machines' GPUs as the pods
// bound and assumed leave them, the running gangs' placements, and the nodes g's pods may not
// go to (Gang.NodeFilter, with each node's CPU and memory left by its pods) taken out of
// NetPack's choice (View.Exclude). A View is valid until the next call of View: its running
// placements are the Live's own, updated in place (the plugin plans a gang at a time).
func (l *Live) View(g *Gang) (*View, error) { return l.ViewRefusing(g, nil) }

// ViewRefusing is View with the nodes of refused (node name -> why) taken out of NetPack's choice
// besides those g's pods may not go to: the extender's, the nodes kube-scheduler's own filters
// rejected for the pod it asks about. A View with other refused nodes than the gang before gets
// a placer of its own (at scheduler.Plan's cost).
func (l *Live) ViewRefusing(g *Gang, refused map[string]string) (*View, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stale {
		l.rebuild()
	}
	if l.err != nil {
		return nil, l.err
	}
	l.refresh()
	b := l.base
	cl := *b.Cluster
	cl.Machines = slices.Clone(b.Cluster.Machines)
	v := &View{Cluster: &cl, Nodes: b.Nodes, Machine: b.Machine, Unlabelled: b.Unlabelled, Running: b.Running, sorted: l.sorted}
	if g == nil {
		return v, nil
	}
	nf := g.nodeFilter()
	refused = maps.Clone(refused)
	for _, n := range l.byM {
		free := Free{MilliCPU: n.allocCPU - n.cpu, Memory: n.allocMem - n.mem}
		if !nf.anyRule && n.plain && nf.cpu <= free.MilliCPU && nf.mem <= free.Memory {
			continue // what refusal would say, without its per-pod loop (most nodes of most gangs)
		}
		if why := nf.refusal(n.node, free); why != "" {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[n.node.Name] = why
		}
	}
	v.Exclude(refused)
	l.usePlanner(v)
	return v, nil
}

// FreeGPUs is what node has left of its allocatable GPUs by the pods the view counts on it (bound
// or assumed, terminal ones aside), those of gang except not counted; false for no such node.
func (l *Live) FreeGPUs(node string, except Key) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.nodes[node]
	if n == nil || n.node == nil {
		return 0, false
	}
	free := n.gpus - n.other - n.inGang
	if g := l.gangs[except]; g != nil {
		for _, f := range g.pods {
			if f.node == node && !f.terminal {
				free += f.gpus
			}
		}
	}
	return free, true
}

// Free is what node has left of CPU and memory by the pods the view counts on it (FreeOf).
func (l *Live) Free(node string) (Free, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.nodes[node]
	if n == nil || n.node == nil {
		return Free{}, false
	}
	return Free{MilliCPU: n.allocCPU - n.cpu, Memory: n.allocMem - n.mem}, true
}

// String is a summary for logs and test failures.
func (l *Live) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d nodes, %d pods on nodes, %d gangs", len(l.nodes), len(l.pods), len(l.gangs))
}
