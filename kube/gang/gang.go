package gang

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// Key names a gang: a PodGroup (pods linked by spec.schedulingGroup) or, where the cluster lacks
// the Workload API, the pods of a namespace sharing JobLabel's value; or an object of a custom
// Form (forms.go) its pods' label names.
type Key struct {
	Namespace, Name string
	// ByLabel: the gang is a JobLabel gang, not a PodGroup.
	ByLabel bool
	Form    Form
}

func (k Key) String() string {
	switch {
	case k.ByLabel:
		return k.Namespace + "/" + JobLabel + "=" + k.Name
	case k.Form != FormPodGroup:
		return k.Namespace + "/" + k.Form.Label() + "=" + k.Name
	}
	return k.Namespace + "/" + k.Name
}

// KeyOf is the gang of a pod; false for a pod of no gang (NetPack leaves it alone). The most
// explicit link wins: spec.schedulingGroup, then a scheduler-plugins PodGroup (Kubeflow Trainer
// labels a TrainJob's pods with it and with their JobSet's name; its PodGroup is the gang it
// means), JobLabel, and last the JobSet.
func KeyOf(p *v1.Pod) (Key, bool) {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return Key{Namespace: p.Namespace, Name: *sg.PodGroupName}, true
	}
	if v := p.Labels[CoschedulingLabel]; v != "" {
		return Key{Namespace: p.Namespace, Name: v, Form: FormCoscheduling}, true
	}
	if v := p.Labels[JobLabel]; v != "" {
		return Key{Namespace: p.Namespace, Name: v, ByLabel: true}, true
	}
	if v := p.Labels[JobSetLabel]; v != "" {
		return Key{Namespace: p.Namespace, Name: v, Form: FormJobSet}, true
	}
	return Key{}, false
}

// Gang is a training job's pods: one PS and its workers.
type Gang struct {
	Key      Key
	MinCount int
	PS       *v1.Pod
	Workers  []*v1.Pod // by name
	Model    netpack.Model
	// only are the nodes NodeFilter found that only some of the pods may use, and which.
	only map[string]podSet
}

// ErrIncomplete: fewer pods than the gang's minimum exist yet, or some still have scheduling
// gates; the gang waits.
var ErrIncomplete = errors.New("waiting for the gang's pods")

// ErrTooMany: the gang has more live pods than its minCount. INAPack takes minCount as the job's
// size (its PS and every worker: the switch sums exactly world-size workers), so a gang is planned
// only with exactly minCount pods; a pod beyond them (one created late, after the gang was planned
// with fewer) would start a job whose world size is not the one its pods were written for.
var ErrTooMany = errors.New("more pods than the gang's minCount")

// Collect builds the gang key from its live pods (any phase but terminal, not being deleted).
// minCount is the PodGroup's gang minimum (0 for a label gang: MinCountAnnotation). A gang that
// can never run (no PS, two PSes, a worker without GPUs, an unknown model) is an error that says
// why; one still missing pods wraps ErrIncomplete.
func Collect(key Key, pods []*v1.Pod, minCount int) (*Gang, error) {
	g := &Gang{Key: key, MinCount: minCount}
	for _, p := range pods {
		if k, ok := KeyOf(p); !ok || k != key || terminal(p) || p.DeletionTimestamp != nil {
			continue
		}
		if key.ByLabel && g.MinCount == 0 {
			if s := p.Annotations[MinCountAnnotation]; s != "" {
				n, err := strconv.Atoi(s)
				if err != nil || n < 2 {
					return nil, fmt.Errorf("gang %s: pod %s: annotation %s=%q: want a count of at least 2 (a PS and a worker)", key, p.Name, MinCountAnnotation, s)
				}
				g.MinCount = n
			}
		}
		switch role := cmp.Or(p.Labels[RoleLabel], RoleWorker); role {
		case RolePS:
			if g.PS != nil {
				return nil, fmt.Errorf("gang %s: two PS pods (%s, %s); want one", key, g.PS.Name, p.Name)
			}
			g.PS = p
		case RoleWorker:
			if PodGPUs(p) < 1 {
				return nil, fmt.Errorf("gang %s: worker pod %s requests no %s (is it the PS? label it, or its replicatedJob's pod template, %s=%s)",
					key, p.Name, GPUResource, RoleLabel, RolePS)
			}
			g.Workers = append(g.Workers, p)
		default:
			return nil, fmt.Errorf("gang %s: pod %s: label %s=%q: want %s or %s", key, p.Name, RoleLabel, role, RolePS, RoleWorker)
		}
	}
	slices.SortFunc(g.Workers, func(a, b *v1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	if g.MinCount == 0 {
		if key.ByLabel {
			return nil, fmt.Errorf("gang %s: no pod carries %s", key, MinCountAnnotation)
		}
		g.MinCount = 1 + len(g.Workers)
	}
	have := len(g.Workers) + btoi(g.PS != nil)
	if have < g.MinCount {
		return g, fmt.Errorf("%w: %d of %d", ErrIncomplete, have, g.MinCount)
	}
	if have > g.MinCount {
		return nil, fmt.Errorf("gang %s: %w: %d live pods, %s %d: an INAPack gang runs all its pods as one job (workers + 1); %s",
			key, ErrTooMany, have, key.sizeName(), g.MinCount, key.tooMany())
	}
	if g.PS == nil {
		hint := ""
		if key.Form != FormPodGroup {
			hint = " (label the pod template of the PS's replicatedJob or replica)"
		}
		return nil, fmt.Errorf("gang %s: no pod labelled %s=%s%s: a job needs its parameter server", key, RoleLabel, RolePS, hint)
	}
	if len(g.Workers) > 32 {
		return nil, fmt.Errorf("gang %s: %d workers: a job has at most 32 (the switch's worker bitmap)", key, len(g.Workers))
	}
	md, err := ModelOf(g.PS)
	if err != nil {
		return nil, err
	}
	g.Model = md
	// A gate's owner may still change its pod: Kueue's topology ungater gives each worker its
	// host's node selector as it lifts its gate. A gang is planned once none of its pods is gated.
	for _, p := range g.Pods() {
		if len(p.Spec.SchedulingGates) > 0 {
			return g, fmt.Errorf("%w: pod %s has scheduling gates (%s)", ErrIncomplete, p.Name, p.Spec.SchedulingGates[0].Name)
		}
	}
	return g, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GPUs is the gang's GPUs: its workers'.
func (g *Gang) GPUs() int {
	n := 0
	for _, w := range g.Workers {
		n += PodGPUs(w)
	}
	return n
}

// Pods are the gang's pods, PS first.
func (g *Gang) Pods() []*v1.Pod { return append([]*v1.Pod{g.PS}, g.Workers...) }

// Plan is NetPack's placement of a gang, pod by pod.
type Plan struct {
	ID  string
	Key Key
	// Node and Rank per pod (Rank for workers only); PSNode is the PS's node. Member is a worker's
	// index among the plan's workers on its node (0..k-1; MemberAnnotation).
	Node      map[types.UID]string
	Rank      map[types.UID]int
	Member    map[types.UID]int
	PSNode    string
	WorldSize int
	// Local is the worker on the PS's node, if any ("" otherwise).
	Local    types.UID
	INA      bool
	Priority uint8
	// Placement is NetPack's, on the view it was made on.
	Placement netpack.Placement
	// Why notes what the plan decided beyond NetPack (e.g. INA off for unlabelled nodes).
	Why []string
}

// psNode is where a gang's PS goes when NetPack's machine for it holds several of the gang's
// worker pods or is one the PS pod may not use: a machine of the placement with one of them, else
// a machine with none, the PS's rack first, in machine order; only machines may allows.
func (v *View) psNode(p netpack.Placement, byMachine map[netpack.MachineID][]*v1.Pod, may func(netpack.MachineID) bool) (netpack.MachineID, bool) {
	for _, w := range p.Workers {
		if len(byMachine[w.Machine]) == 1 && may(w.Machine) {
			return w.Machine, true
		}
	}
	rack := v.Cluster.Machines[p.PS].Rack
	best, found := netpack.MachineID(0), false
	for m := range v.Cluster.Machines {
		id := netpack.MachineID(m)
		if _, used := byMachine[id]; used || !may(id) {
			continue
		}
		if v.Cluster.Machines[m].Rack == rack {
			return id, true
		}
		if !found {
			best, found = id, true
		}
	}
	return best, found
}

// ErrNoFit: NetPack cannot place the gang on the cluster as it is now.
var ErrNoFit = errors.New("NetPack cannot place the gang now")

// Place plans g on v with cfg's policy: the same code the scheduler service places with
// (scheduler.Plan), then each worker pod onto a machine of the placement. A worker runs on one
// node, so a placement that gives a node other than one worker pod's GPUs cannot be followed:
// that too is ErrNoFit, with the reason.
func (v *View) Place(cfg Config, g *Gang, id string) (*Plan, error) {
	cfg = cfg.WithDefaults()
	j := &netpack.Job{ID: g.Key.String(), GPUs: g.GPUs(), Model: g.Model, Iterations: 1, PSMaxGPUs: g.PSMaxGPUs()}
	if j.GPUs > v.Cluster.TotalGPUs() {
		return nil, fmt.Errorf("%w: gang %s needs %d GPUs, the cluster has %d", ErrNoFit, g.Key, j.GPUs, v.Cluster.TotalGPUs())
	}
	var p netpack.Placement
	var ok bool
	var skipped []error
	err := errNoPlanner
	cl := v.Cluster
	if len(g.only) > 0 {
		// Some nodes take only some of the gang's pods (Kueue's host selectors): NetPack plans on
		// what those nodes offer the gang, a cluster of its own, so not with the kept placer.
		cl = v.offered(g, v.runningBut(g.Key))
	} else if _, run := v.Running[g.Key]; v.live != nil && !run {
		p, ok, err = v.live.plan(v, cfg.Policy, j) // scheduler.Plan's placement, with the placer kept from the gang before
	}
	if errors.Is(err, errNoPlanner) {
		p, ok, skipped, err = scheduler.Plan(cl, v.runningBut(g.Key), cfg.Policy, j)
	}
	v.Skipped = append(v.Skipped, skipped...)
	if err != nil {
		return nil, err
	}
	if !ok {
		where := ""
		if cl != v.Cluster {
			where = " on the nodes its pods may use"
		}
		return nil, fmt.Errorf("%w: gang %s needs %d GPUs in a placement %s allows; %d are free%s", ErrNoFit, g.Key, j.GPUs, cfg.Policy, free(cl, v.runningBut(g.Key)), where)
	}
	pl := &Plan{ID: id, Key: g.Key, Node: map[types.UID]string{}, Rank: map[types.UID]int{}, Member: map[types.UID]int{},
		PSNode: v.Nodes[p.PS], WorldSize: len(g.Workers), INA: p.INA, Priority: p.Priority, Placement: p}
	pl.Node[g.PS.UID] = pl.PSNode
	byMachine, err := v.assign(g, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s's placement of gang %s: %v", ErrNoFit, cfg.Policy, g.Key, err)
	}
	psMay := func(m netpack.MachineID) bool { return g.may(v.Nodes[m], 0) }
	if on := byMachine[p.PS]; len(on) > 1 || !psMay(p.PS) {
		// One worker reaches the PS over its node's private link; the others would have to reach
		// it through the switch port the PS itself is behind, which no switch sends a packet back
		// out of. The PS moves to a node with one worker of the gang, else to one with none; and
		// to a node the PS pod may use. NetPack's own placer honours the job's PSMaxGPUs and gets
		// here only for a PS pod's own constraints; the baselines may for both.
		why := fmt.Sprintf("%d worker pods of the gang share %s, and only one can reach a PS on its node", len(on), v.Nodes[p.PS])
		if !psMay(p.PS) {
			why = fmt.Sprintf("pod %s may not go to %s (its node selector, affinity, tolerations or requests)", g.PS.Name, v.Nodes[p.PS])
		}
		ps, ok := v.psNode(p, byMachine, psMay)
		if !ok {
			return nil, fmt.Errorf("%w: %s puts gang %s's PS on node %s: %s; and no node the PS may use has one or none of the worker pods",
				ErrNoFit, cfg.Policy, g.Key, v.Nodes[p.PS], why)
		}
		pl.Why = append(pl.Why, fmt.Sprintf("PS on node %s, not %s: %s", v.Nodes[ps], v.Nodes[p.PS], why))
		p.PS = ps
		pl.Placement.PS, pl.PSNode = ps, v.Nodes[ps]
		pl.Node[g.PS.UID] = pl.PSNode
	}
	var local *v1.Pod
	rank := 0
	for _, w := range p.Workers {
		for m, pod := range byMachine[w.Machine] {
			pl.Node[pod.UID] = v.Nodes[w.Machine]
			pl.Member[pod.UID] = m
			if w.Machine == p.PS {
				local = pod // the PS's node's one worker reaches the PS over the node's private link
				continue
			}
			pl.Rank[pod.UID] = rank
			rank++
		}
	}
	if local != nil {
		pl.Local = local.UID
		pl.Rank[local.UID] = rank // last: it talks to the PS inside its node, as in the scheduler service
	}
	for _, n := range slices.Sorted(maps.Values(pl.Node)) {
		if v.Unlabelled[n] && !slices.ContainsFunc(pl.Why, func(w string) bool { return strings.Contains(w, " "+n+" ") }) {
			pl.INA = false
			pl.Why = append(pl.Why, fmt.Sprintf("INA off: node %s has no %s label, so no switch is known to aggregate there", n, RackLabel))
		}
	}
	return pl, nil
}

// runningBut are the running placements but k's, by job ID (as scheduler.Plan is given them).
func (v *View) runningBut(k Key) []netpack.Placement {
	running := make([]netpack.Placement, 0, len(v.Running))
	if v.sorted != nil {
		id := k.String()
		for _, p := range v.sorted {
			if p.Job.ID != id {
				running = append(running, p)
			}
		}
		return running
	}
	for key, p := range v.Running {
		if key != k {
			running = append(running, p)
		}
	}
	slices.SortFunc(running, func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	return running
}

func free(cl *netpack.Cluster, running []netpack.Placement) int {
	st := netpack.NewState(cl)
	for _, r := range running {
		_ = st.Add(r)
	}
	n := 0
	for m := range cl.Machines {
		n += st.FreeGPUs(netpack.MachineID(m))
	}
	return n
}

// Annotations are the plan annotations of pod (one of the plan's).
func (pl *Plan) Annotations(pod *v1.Pod) map[string]string {
	a := map[string]string{
		PlanAnnotation:      pl.ID,
		NodeAnnotation:      pl.Node[pod.UID],
		WorldSizeAnnotation: strconv.Itoa(pl.WorldSize),
		PSNodeAnnotation:    pl.PSNode,
		INAAnnotation:       strconv.FormatBool(pl.INA),
		PriorityAnnotation:  strconv.Itoa(int(pl.Priority)),
		LocalAnnotation:     strconv.FormatBool(pl.Local != "" && (pod.UID == pl.Local || pod.Labels[RoleLabel] == RolePS)),
	}
	if r, ok := pl.Rank[pod.UID]; ok {
		a[RankAnnotation] = strconv.Itoa(r)
	}
	if m, ok := pl.Member[pod.UID]; ok {
		a[MemberAnnotation] = strconv.Itoa(m)
	}
	return a
}

// ErrBrokenPlan: the gang's pods carry a plan that cannot be resumed (pods of it disagree, or a
// node of it is gone) while some of them are bound already.
var ErrBrokenPlan = errors.New("the gang's plan cannot be resumed")

// PlanOf is the plan the gang's pods carry in the API (the plugin writes it onto every pod of the
// gang before it binds the first), so that any scheduler (another replica, or this one after a
// restart) resumes it rather than planning pods already bound anew. nil, nil: no pod carries a
// plan, or the pods carry parts of plans none of whose pods is bound (abandoned whole: the
// caller plans anew). A plan some pods are bound by but that is not whole on every pod is
// ErrBrokenPlan.
func PlanOf(g *Gang) (*Plan, error) {
	pods := g.Pods()
	ids := map[string]bool{}
	bound := ""
	for _, p := range pods {
		ids[p.Annotations[PlanAnnotation]] = true
		if p.Spec.NodeName != "" && bound == "" {
			bound = p.Name + "@" + p.Spec.NodeName
		}
	}
	if len(ids) == 1 && ids[""] {
		return nil, nil
	}
	abandon := func(why string) (*Plan, error) {
		if bound != "" {
			return nil, fmt.Errorf("gang %s: %w: %s, and pod %s is bound", g.Key, ErrBrokenPlan, why, bound)
		}
		return nil, nil
	}
	if len(ids) != 1 {
		return abandon(fmt.Sprintf("its pods carry %d different plans", len(ids)))
	}
	pl := &Plan{Key: g.Key, Node: map[types.UID]string{}, Rank: map[types.UID]int{}, Member: map[types.UID]int{}}
	for _, p := range pods {
		a := p.Annotations
		pl.ID = a[PlanAnnotation]
		node := a[NodeAnnotation]
		if node == "" || (p.Spec.NodeName != "" && p.Spec.NodeName != node) {
			return abandon(fmt.Sprintf("pod %s has no node in plan %s", p.Name, pl.ID))
		}
		pl.Node[p.UID] = node
		pl.PSNode, pl.INA = a[PSNodeAnnotation], a[INAAnnotation] != "false"
		pr, _ := strconv.Atoi(a[PriorityAnnotation])
		pl.Priority = uint8(pr)
		ws, err := strconv.Atoi(a[WorldSizeAnnotation])
		if err != nil || ws != len(g.Workers) {
			return abandon(fmt.Sprintf("plan %s's world size %q is not the gang's %d workers", pl.ID, a[WorldSizeAnnotation], len(g.Workers)))
		}
		pl.WorldSize = ws
		if p == g.PS {
			continue
		}
		r, err := strconv.Atoi(a[RankAnnotation])
		if err != nil {
			return abandon(fmt.Sprintf("worker %s has no rank in plan %s", p.Name, pl.ID))
		}
		pl.Rank[p.UID] = r
		if m, err := strconv.Atoi(a[MemberAnnotation]); err == nil {
			pl.Member[p.UID] = m
		}
		if a[LocalAnnotation] == "true" {
			pl.Local = p.UID
		}
	}
	return pl, nil
}

// String is the plan as the plugin logs it: node per rank, the PS, INA, priority.
func (pl *Plan) String() string {
	byRank := make([]string, pl.WorldSize)
	for uid, r := range pl.Rank {
		if r < len(byRank) {
			byRank[r] = pl.Node[uid]
		}
	}
	return fmt.Sprintf("workers %s, ps %s, ina %v, priority %d", strings.Join(byRank, ","), pl.PSNode, pl.INA, pl.Priority)
}
