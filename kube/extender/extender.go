package extender

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/inapack/inapack/kube/gang"
)

// Config is the extender's model of the cluster (as the plugin's args give it) and its waits.
type Config struct {
	Model gang.Config
	// GangTimeout is how long a gang's pods have, from its plan, to all reach bind; past it the
	// gang is given up and planned anew (default 60s; the plugin's permitTimeout).
	GangTimeout time.Duration
	// ReadyTimeout is how long a bind waits for the operator's Ready (default 60s);
	// WaitForOperator false binds at once (placement only, no operator deployed).
	ReadyTimeout    time.Duration
	WaitForOperator bool
}

func (c Config) withDefaults() Config {
	c.Model = c.Model.WithDefaults()
	c.GangTimeout = cmp.Or(c.GangTimeout, time.Minute)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, time.Minute)
	return c
}

// Extender answers kube-scheduler's filter, prioritize and bind calls. It reads nodes, pods and
// PodGroups from informers, and keeps the plan of each gang from its first filter until the API
// shows every pod of it bound: pods it has planned but the API does not show bound yet are part of
// the cluster every other gang is planned on.
type Extender struct {
	cfg    Config
	cs     kubernetes.Interface
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
	groups gang.PodGroups
	views  gang.ViewCache
	log    *slog.Logger

	mu    sync.Mutex
	plans map[gang.Key]*attempt
}

// attempt is one try at placing a gang.
type attempt struct {
	plan    *gang.Plan
	pods    map[types.UID]*v1.Pod // the gang's pods, as planned
	made    time.Time
	arrived sets.Set[types.UID] // pods that reached bind, and those bound before the try resumed
	all     chan struct{}       // closed once every pod reached bind
	dropped chan struct{}       // closed when the try is given up
	written sync.Once           // the plan is written onto every pod of the gang, once
	err     error               // of the writing
}

func newAttempt(plan *gang.Plan, g *gang.Gang) *attempt {
	a := &attempt{plan: plan, pods: map[types.UID]*v1.Pod{}, made: time.Now(), arrived: sets.New[types.UID](),
		all: make(chan struct{}), dropped: make(chan struct{})}
	for _, p := range g.Pods() {
		a.pods[p.UID] = p
		if p.Spec.NodeName != "" {
			a.arrived.Insert(p.UID)
		}
	}
	return a
}

// New starts informers on cs and returns the extender once they have synced.
func New(ctx context.Context, cs kubernetes.Interface, cfg Config, log *slog.Logger) (*Extender, error) {
	if err := cfg.Model.Validate(); err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	e := &Extender{cfg: cfg.withDefaults(), cs: cs, log: cmp.Or(log, slog.Default()), plans: map[gang.Key]*attempt{},
		nodes: f.Core().V1().Nodes().Lister(), pods: f.Core().V1().Pods().Lister()}
	var err error
	if e.groups, err = gang.NewPodGroups(cs.Discovery(), f); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("extender: the %v informer did not sync", typ)
		}
	}
	e.log.Info("NetPack extender", "policy", e.cfg.Model.Policy, "podGroups", e.groups.Enabled(), "waitForOperator", e.cfg.WaitForOperator)
	return e, nil
}

// Filter keeps the one candidate node the gang's plan gives the pod. A pod of no gang keeps every
// candidate (kube-scheduler's own checks decide); a pod of a gang that cannot be placed whole
// (incomplete, no fit, bad input) keeps none, with the reason on every node.
func (e *Extender) Filter(args *extenderv1.ExtenderArgs) *extenderv1.ExtenderFilterResult {
	cands := candidates(args)
	keep := func(names []string) *extenderv1.ExtenderFilterResult {
		res := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
		if args.NodeNames != nil {
			res.NodeNames = &names
			return res
		}
		res.Nodes = &v1.NodeList{}
		if args.Nodes != nil {
			for _, n := range args.Nodes.Items {
				if slices.Contains(names, n.Name) {
					res.Nodes.Items = append(res.Nodes.Items, n)
				}
			}
		}
		return res
	}
	if args.Pod == nil {
		return &extenderv1.ExtenderFilterResult{Error: "no pod in the request"}
	}
	key, ok := gang.KeyOf(args.Pod)
	if !ok {
		return keep(cands)
	}
	node, err := e.nodeFor(args.Pod, key, cands)
	if err != nil {
		e.log.Info("extender: no node for a gang's pod", "pod", args.Pod.Namespace+"/"+args.Pod.Name, "err", err)
		// Bad input (a gang that can never run as written) is unresolvable: no preemption helps.
		res := keep(nil)
		failed := res.FailedNodes
		if !errors.Is(err, gang.ErrNoFit) && !errors.Is(err, gang.ErrIncomplete) && !errors.Is(err, errReplan) {
			res.FailedAndUnresolvableNodes = extenderv1.FailedNodesMap{}
			failed = res.FailedAndUnresolvableNodes
		}
		for _, n := range cands {
			failed[n] = err.Error()
		}
		return res
	}
	res := keep([]string{node})
	for _, n := range cands {
		if n != node {
			res.FailedNodes[n] = fmt.Sprintf("NetPack places pod %s of gang %s on %s", args.Pod.Name, key, node)
		}
	}
	return res
}

// Prioritize scores the planned node highest, every other candidate 0.
func (e *Extender) Prioritize(args *extenderv1.ExtenderArgs) (*extenderv1.HostPriorityList, error) {
	if args.Pod == nil {
		return nil, errors.New("no pod in the request")
	}
	want := ""
	if key, ok := gang.KeyOf(args.Pod); ok {
		e.mu.Lock()
		if a := e.plans[key]; a != nil {
			want = a.plan.Node[args.Pod.UID]
		}
		e.mu.Unlock()
	}
	list := extenderv1.HostPriorityList{}
	for _, n := range candidates(args) {
		s := int64(0)
		if n == want {
			s = extenderv1.MaxExtenderPriority
		}
		list = append(list, extenderv1.HostPriority{Host: n, Score: s})
	}
	return &list, nil
}

// candidates are the node names of a request, whichever form kube-scheduler used
// (nodeCacheCapable: names; otherwise whole Node objects).
func candidates(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	var out []string
	if args.Nodes != nil {
		for _, n := range args.Nodes.Items {
			out = append(out, n.Name)
		}
	}
	return out
}

// errReplan: the gang's try was given up; its next pod plans it anew.
var errReplan = errors.New("the gang is planned again")

// nodeFor is the node of pod in its gang's plan, planning the gang now if it has none.
func (e *Extender) nodeFor(pod *v1.Pod, key gang.Key, cands []string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.collectGarbage()
	a := e.plans[key]
	if a == nil {
		var err error
		if a, err = e.attemptLocked(pod, key, cands); err != nil {
			return "", err
		}
	}
	node, ok := a.plan.Node[pod.UID]
	if !ok {
		e.dropLocked(key, a)
		return "", fmt.Errorf("%w: gang %s was planned without pod %s", errReplan, key, pod.Name)
	}
	if !slices.Contains(cands, node) {
		// kube-scheduler's own filters rejected the planned node (something NetPack does not
		// model took it): this try cannot finish whole, so the next pod plans the gang anew.
		e.dropLocked(key, a)
		return "", fmt.Errorf("%w: gang %s: NetPack planned pod %s on %s, which kube-scheduler's own checks reject now", errReplan, key, pod.Name, node)
	}
	return node, nil
}

// attemptLocked is a new try for key's gang: the plan its pods carry in the API (written before
// the first of them was bound, by this extender before a restart: resumed whole while it still
// fits, abandoned whole while none of its pods is bound), else a new plan.
func (e *Extender) attemptLocked(pod *v1.Pod, key gang.Key, cands []string) (*attempt, error) {
	all, err := e.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	// The pod in the request is the newest copy of it.
	all = slices.DeleteFunc(slices.Clone(all), func(p *v1.Pod) bool { return p.UID == pod.UID })
	all = append(all, pod)
	minCount := 0
	if !key.ByLabel {
		if minCount, err = e.groups.MinCount(key); err != nil {
			return nil, err
		}
	}
	var mine []*v1.Pod
	for _, p := range all {
		if p.Namespace == key.Namespace {
			mine = append(mine, p)
		}
	}
	g, err := gang.Collect(key, mine, minCount)
	if err != nil {
		return nil, err
	}
	saved, err := gang.PlanOf(g)
	if err != nil {
		return nil, err
	}
	if saved != nil {
		a := newAttempt(saved, g)
		why := e.staleLocked(a, key, all)
		if why == "" {
			e.plans[key] = a
			e.log.Info("NetPack resumes a gang's plan from its pods", "gang", key.String(), "id", saved.ID, "bound", a.arrived.Len())
			return a, nil
		}
		if a.arrived.Len() > 0 {
			return nil, fmt.Errorf("gang %s: %w: %s, and %d of its pods are bound", key, gang.ErrBrokenPlan, why, a.arrived.Len())
		}
		e.log.Info("NetPack abandons a gang's plan whole; none of its pods is bound", "gang", key.String(), "id", saved.ID, "why", why)
	}
	return e.planLocked(pod, g, all, cands)
}

// staleLocked says why a's plan can no longer be followed ("" if it can): a node of it is gone,
// or has fewer GPUs free than the plan puts there (other pods, bound or planned, came first).
func (e *Extender) staleLocked(a *attempt, key gang.Key, all []*v1.Pod) string {
	need := map[string]int{}
	for uid, n := range a.plan.Node {
		need[n] += gang.PodGPUs(a.pods[uid])
	}
	used := map[string]int{}
	for _, p := range e.assignedLocked(all, key) {
		if k, ok := gang.KeyOf(p); !ok || k != key {
			used[p.Spec.NodeName] += gang.PodGPUs(p)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(need)) {
		node, err := e.nodes.Get(n)
		if err != nil {
			return fmt.Sprintf("node %s of plan %s is gone", n, a.plan.ID)
		}
		if free := gang.GPUs(node.Status.Allocatable) - used[n]; free < need[n] {
			return fmt.Sprintf("node %s has %d GPUs free, plan %s puts %d there", n, free, a.plan.ID, need[n])
		}
	}
	return ""
}

// planLocked plans g on the cluster the informers show, plus every other gang's planned pods the
// API does not show bound yet (all is every pod, pod's newest copy included). NetPack chooses
// only among nodes every pod of the gang may go to (gang.Refusal: cordons, taints, affinity, CPU
// and memory) and that kube-scheduler's own filters left as candidates for this pod (cands), so
// a plan it cannot follow is not made again with the same inputs.
func (e *Extender) planLocked(pod *v1.Pod, g *gang.Gang, all []*v1.Pod, cands []string) (*attempt, error) {
	key := g.Key
	nodes, err := e.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	assigned := e.assignedLocked(all, key)
	v, err := e.views.View(e.cfg.Model, nodes, assigned)
	if err != nil {
		return nil, err
	}
	onNode := map[string][]*v1.Pod{}
	for _, p := range assigned {
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
	}
	refused := map[string]string{}
	refusal := g.NodeFilter()
	for _, n := range nodes {
		if !slices.Contains(cands, n.Name) {
			refused[n.Name] = fmt.Sprintf("kube-scheduler's filters reject node %s for pod %s", n.Name, pod.Name)
		} else if why := refusal(n, gang.FreeOf(n, onNode[n.Name])); why != "" {
			refused[n.Name] = why
		}
	}
	v.Exclude(refused)
	for _, s := range v.Skipped {
		e.log.Info("extender: a running gang does not fit its nodes' GPUs; left out", "err", s)
	}
	plan, err := v.Place(e.cfg.Model, g, fmt.Sprintf("%s#%d", key, time.Now().UnixNano()))
	if err != nil {
		if len(refused) > 0 {
			err = fmt.Errorf("%w (%d nodes refused, e.g. %s)", err, len(refused), refused[slices.Sorted(maps.Keys(refused))[0]])
		}
		return nil, err
	}
	a := newAttempt(plan, g)
	e.plans[key] = a
	e.log.Info("NetPack planned a gang", "gang", key.String(), "plan", plan.String(), "id", plan.ID)
	for _, why := range plan.Why {
		e.log.Warn("NetPack", "gang", key.String(), "why", why)
	}
	return a, nil
}

// assignedLocked are the pods on nodes as NetPack must count them: those the API shows bound,
// and the pods of every other planned gang at their planned nodes.
func (e *Extender) assignedLocked(all []*v1.Pod, skip gang.Key) []*v1.Pod {
	var out []*v1.Pod
	seen := sets.New[types.UID]()
	for _, p := range all {
		if p.Spec.NodeName != "" {
			out = append(out, p)
			seen.Insert(p.UID)
		}
	}
	for key, a := range e.plans {
		if key == skip {
			continue
		}
		for uid, p := range a.pods {
			if seen.Has(uid) {
				continue
			}
			cp := p.DeepCopy()
			cp.Spec.NodeName = a.plan.Node[uid]
			out = append(out, cp)
		}
	}
	return out
}

// collectGarbage forgets the plans whose pods the API shows bound (the pods themselves are the
// gang's placement from then on), whose pods are gone, and those whose pods did not all reach
// bind within GangTimeout.
func (e *Extender) collectGarbage() {
	for key, a := range e.plans {
		bound, gone := 0, 0
		for uid, p := range a.pods {
			cur, err := e.pods.Pods(p.Namespace).Get(p.Name)
			switch {
			case err != nil || cur.UID != uid || cur.DeletionTimestamp != nil:
				gone++
			case cur.Spec.NodeName != "":
				bound++
			}
		}
		switch {
		case bound == len(a.pods):
			delete(e.plans, key)
		case gone > 0:
			e.dropLocked(key, a)
		case time.Since(a.made) > e.cfg.GangTimeout && a.arrived.Len() < len(a.pods):
			e.log.Warn("extender: a gang's pods did not all reach bind in time; planned again", "gang", key.String(),
				"arrived", a.arrived.Len(), "pods", len(a.pods), "timeout", e.cfg.GangTimeout)
			e.dropLocked(key, a)
		}
	}
}

// dropLocked gives up a try: pods waiting in bind for it fail, and the gang is planned anew.
func (e *Extender) dropLocked(key gang.Key, a *attempt) {
	if e.plans[key] == a {
		delete(e.plans, key)
	}
	select {
	case <-a.dropped:
	default:
		close(a.dropped)
	}
}
