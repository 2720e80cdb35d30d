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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
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
// the cluster every other gang is planned on (assumed on their planned nodes in the live view, as
// the plugin's Reserve assumes them).
type Extender struct {
	cfg    Config
	cs     kubernetes.Interface
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
	byGang cache.Indexer // the pod informer's store, indexed by gang (gang.IndexName)
	groups gang.PodGroups
	// live is the cluster's view, fed by the node and pod informers' events and by the plans
	// (gang.Live, the plugin's): a gang's plan costs no pass over every pod of the cluster.
	live *gang.Live
	// rec makes refusals and the gangs' conditions visible, with events (gang.Recorder, the
	// plugin's).
	rec *gang.Recorder
	log *slog.Logger

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

// New starts informers on cs and returns the extender once they (and the live view) have
// synced. Its events are recorded until ctx ends.
func New(ctx context.Context, cs kubernetes.Interface, cfg Config, log *slog.Logger) (*Extender, error) {
	if err := cfg.Model.Validate(); err != nil {
		return nil, err
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.AddIndexers(cache.Indexers{gang.IndexName: gang.IndexFunc}); err != nil {
		return nil, fmt.Errorf("extender: indexing pods by gang: %w", err)
	}
	e := &Extender{cfg: cfg.withDefaults(), cs: cs, log: cmp.Or(log, slog.Default()), plans: map[gang.Key]*attempt{},
		nodes: f.Core().V1().Nodes().Lister(), pods: f.Core().V1().Pods().Lister(), byGang: podInf.GetIndexer()}
	e.live = gang.NewLive(e.cfg.Model)
	if err := e.live.Register(f.Core().V1().Nodes().Informer(), podInf); err != nil {
		return nil, fmt.Errorf("extender: %w", err)
	}
	var err error
	if e.groups, err = gang.NewPodGroups(cs.Discovery(), f); err != nil {
		return nil, err
	}
	eb := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := eb.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("extender: recording events: %w", err)
	}
	go func() { <-ctx.Done(); eb.Shutdown() }()
	e.rec = gang.NewRecorder(cs, eb.NewRecorder(scheme.Scheme, "ina-kube-extender"), e.groups.Enabled())
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("extender: the %v informer did not sync", typ)
		}
	}
	// The informers' stores are synced; the view's handlers may still be taking their objects.
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return e.live.Synced(), nil }); err != nil {
		return nil, fmt.Errorf("extender: the live view did not sync: %w", err)
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
		res := keep(nil)
		failed := res.FailedNodes
		// kube-scheduler writes the pod's PodScheduled condition and a FailedScheduling event
		// with the reason below; the gang's PodGroup carries it too, and a refused gang's pod
		// gets NetPack's own condition and event, as the plugin's do.
		switch {
		case errors.Is(err, gang.ErrIncomplete), errors.Is(err, errReplan):
			// the gang waits for its pods, or for its next plan: nothing refused
		case errors.Is(err, gang.ErrNoFit):
			e.rec.Planned(context.Background(), key, metav1.ConditionFalse, gang.ReasonNoFit, err.Error())
		default:
			// Bad input (a gang that can never run as written) is unresolvable: no preemption helps.
			res.FailedAndUnresolvableNodes = extenderv1.FailedNodesMap{}
			failed = res.FailedAndUnresolvableNodes
			e.rec.Refuse(context.Background(), args.Pod, err.Error())
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
	objs, err := e.byGang.ByIndex(gang.IndexName, key.String())
	if err != nil {
		return nil, err
	}
	mine := make([]*v1.Pod, 0, len(objs)+1)
	for _, o := range objs {
		if p := o.(*v1.Pod); p.UID != pod.UID {
			mine = append(mine, p)
		}
	}
	mine = append(mine, pod) // the pod in the request is the newest copy of it
	minCount := 0
	if !key.ByLabel {
		if minCount, err = e.groups.MinCount(key); err != nil {
			return nil, err
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
		why := e.staleLocked(a, key)
		if why == "" {
			e.keepLocked(key, a)
			e.log.Info("NetPack resumes a gang's plan from its pods", "gang", key.String(), "id", saved.ID, "bound", a.arrived.Len())
			return a, nil
		}
		if a.arrived.Len() > 0 {
			return nil, fmt.Errorf("gang %s: %w: %s, and %d of its pods are bound", key, gang.ErrBrokenPlan, why, a.arrived.Len())
		}
		e.log.Info("NetPack abandons a gang's plan whole; none of its pods is bound", "gang", key.String(), "id", saved.ID, "why", why)
	}
	return e.planLocked(pod, g, cands)
}

// staleLocked says why a's plan can no longer be followed ("" if it can): a node of it is gone,
// or has fewer GPUs free than the plan puts there (other pods, bound or planned, came first).
func (e *Extender) staleLocked(a *attempt, key gang.Key) string {
	need := map[string]int{}
	for uid, n := range a.plan.Node {
		need[n] += gang.PodGPUs(a.pods[uid])
	}
	for _, n := range slices.Sorted(maps.Keys(need)) {
		free, ok := e.live.FreeGPUs(n, key)
		if !ok {
			return fmt.Sprintf("node %s of plan %s is gone", n, a.plan.ID)
		}
		if free < need[n] {
			return fmt.Sprintf("node %s has %d GPUs free, plan %s puts %d there", n, free, a.plan.ID, need[n])
		}
	}
	return ""
}

// planLocked plans g on the live view: the cluster the informers show, every other gang's planned
// pods the API does not show bound yet assumed on their nodes. NetPack chooses only among nodes
// some pod of the gang may go to (gang.Refusal: cordons, taints, affinity, CPU and memory) and
// that kube-scheduler's own filters left as candidates for this pod (cands), so a plan it cannot
// follow is not made again with the same inputs.
func (e *Extender) planLocked(pod *v1.Pod, g *gang.Gang, cands []string) (*attempt, error) {
	key := g.Key
	nodes, err := e.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	cand := sets.New(cands...)
	refused := map[string]string{}
	for _, n := range nodes {
		if !cand.Has(n.Name) {
			refused[n.Name] = fmt.Sprintf("kube-scheduler's filters reject node %s for pod %s", n.Name, pod.Name)
		}
	}
	v, err := e.live.ViewRefusing(g, refused)
	if err != nil {
		return nil, err
	}
	refused = v.Refused
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
	e.keepLocked(key, a)
	e.log.Info("NetPack planned a gang", "gang", key.String(), "plan", plan.String(), "id", plan.ID)
	e.rec.Planned(context.Background(), key, metav1.ConditionTrue, gang.ReasonPlanned, fmt.Sprintf("plan %s: %s", plan.ID, plan))
	for _, why := range plan.Why {
		e.log.Warn("NetPack", "gang", key.String(), "why", why)
	}
	return a, nil
}

// keepLocked makes a key's try: its pods not bound yet count on their planned nodes in the live
// view (every other gang is planned around them) until the API binds them there or the try is
// given up (dropLocked).
func (e *Extender) keepLocked(key gang.Key, a *attempt) {
	e.plans[key] = a
	for uid, p := range a.pods {
		if p.Spec.NodeName == "" {
			e.live.Assume(p, a.plan.Node[uid])
		}
	}
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
	for uid := range a.pods {
		e.live.Forget(uid) // a pod the API has bound stays
	}
	select {
	case <-a.dropped:
	default:
		close(a.dropped)
	}
}
