// Package plugin is NetPack as a kube-scheduler framework plugin: it places a training gang (a
// PodGroup with the gang policy, pods sharing the inapack.io/job label, a scheduler-plugins
// PodGroup or a JobSet: gang/forms.go) as one NetPack placement and holds every pod of the gang
// to it, all pods or none.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/inapack/inapack/kube/gang"
)

// Name is the plugin's name in a scheduler profile.
const Name = "NetPack"

// NetPack is the plugin. Its state is the plan of each gang being scheduled: made at the gang's
// first pod (or resumed from the plan the gang's pods carry in the API), kept until every pod of
// it is bound or the gang is given up.
type NetPack struct {
	h      fwk.Handle
	args   Args
	cfg    gang.Config
	pods   corelisters.PodLister
	byGang cache.Indexer // the scheduler's pod informer's store, indexed by gang (gang.IndexName): PreEnqueue runs for each pod of each waiting gang, under the queue's lock, and lists no other pod
	nodes  corelisters.NodeLister
	group  gang.PodGroups
	// live is the cluster's view, fed by the informers' events and Reserve/Unreserve: building
	// it from the scheduler's snapshot for each gang costs a pass over every pod.
	live *gang.Live

	// rec writes refusals onto pods and the gangs' conditions onto their PodGroups, with events
	// (the extender's too); under no lock of ours: attemptFor refuses while it holds mu.
	rec *gang.Recorder

	mu    sync.Mutex
	plans map[gang.Key]*attempt
}

// mutation breaks the gang logic on purpose, for the mutation check only (mutation_test.go sets
// it in the test binary from INAPACK_MUTATION; nothing else does): the live tests must fail with
// Permit letting every pod go at once, or with PreEnqueue queueing incomplete gangs.
var mutation struct{ permitAllows, preEnqueueAdmits bool }

// attempt is one try at a gang: its plan and which of its pods have reserved and bound.
type attempt struct {
	plan     *gang.Plan
	made     time.Time
	pods     map[types.UID]*v1.Pod
	gpus     map[types.UID]int
	reserved sets.Set[types.UID]
	bound    sets.Set[types.UID]
	// written: the plan is on every pod of it in the API (the first PreBind writes it, before
	// any pod of the gang is bound); err is that write's outcome.
	written sync.Once
	err     error
	// activated: the gang's other pods were brought to the active queue (activate).
	activated bool
}

// stale says why a plan can no longer be followed ("" if it can): it is older than a whole try
// may take, or a node of it no longer has the GPUs its pod needs (another pod came first). The
// scheduler may reserve and unreserve the gang's pods several times while it evaluates one
// placement, so a plan outlives an Unreserve; it is dropped when it no longer fits.
func (a *attempt) stale(key gang.Key, nodes []fwk.NodeInfo, maxAge time.Duration) string {
	if a.bound.Len() == 0 && time.Since(a.made) > maxAge {
		return fmt.Sprintf("plan %s is older than %v", a.plan.ID, maxAge)
	}
	byName := map[string]fwk.NodeInfo{}
	for _, ni := range nodes {
		byName[ni.Node().Name] = ni
	}
	need := map[string]int{}
	for uid, n := range a.plan.Node {
		need[n] += a.gpus[uid]
	}
	for n, want := range need {
		ni, ok := byName[n]
		if !ok {
			return "node " + n + " is gone"
		}
		free := gang.GPUs(ni.Node().Status.Allocatable)
		for _, pi := range ni.GetPods() {
			if k, ok := gang.KeyOf(pi.GetPod()); !ok || k != key {
				free -= gang.PodGPUs(pi.GetPod())
			}
		}
		if free < want {
			return fmt.Sprintf("node %s has %d GPUs free, the plan puts %d there", n, free, want)
		}
	}
	return ""
}

var (
	_ fwk.PreEnqueuePlugin  = &NetPack{}
	_ fwk.PreFilterPlugin   = &NetPack{}
	_ fwk.FilterPlugin      = &NetPack{}
	_ fwk.ScorePlugin       = &NetPack{}
	_ fwk.ReservePlugin     = &NetPack{}
	_ fwk.PermitPlugin      = &NetPack{}
	_ fwk.PreBindPlugin     = &NetPack{}
	_ fwk.PostBindPlugin    = &NetPack{}
	_ fwk.EnqueueExtensions = &NetPack{}
)

// New is the plugin's factory (app.WithPlugin(Name, New)).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	inf := h.SharedInformerFactory().Core().V1().Pods().Informer()
	if _, ok := inf.GetIndexer().GetIndexers()[gang.IndexName]; !ok { // a second profile shares the informer
		if err := inf.AddIndexers(cache.Indexers{gang.IndexName: gang.IndexFunc}); err != nil {
			return nil, fmt.Errorf("NetPack: indexing pods by gang: %w", err)
		}
	}
	p := &NetPack{h: h, args: args, cfg: args.Config(), plans: map[gang.Key]*attempt{},
		pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), byGang: inf.GetIndexer(),
		nodes: h.SharedInformerFactory().Core().V1().Nodes().Lister(), live: gang.NewLive(args.Config())}
	if err := p.live.Register(h.SharedInformerFactory().Core().V1().Nodes().Informer(), inf); err != nil {
		return nil, fmt.Errorf("NetPack: %w", err)
	}
	group, err := gang.NewPodGroups(h.ClientSet().Discovery(), h.SharedInformerFactory())
	if err != nil {
		klog.FromContext(ctx).Info("NetPack: gangs by label only", "err", err)
	}
	if group, err = customForms(ctx, h, group, p.byGang); err != nil {
		return nil, err
	}
	p.group = group
	p.rec = gang.NewRecorder(h.ClientSet(), h.EventRecorder(), group.Enabled())
	registerPluginMetrics()
	klog.FromContext(ctx).Info("NetPack plugin", "policy", p.cfg.Policy, "podGroups", p.group.Enabled(), "coschedulingPodGroups", served(p.group, gang.FormCoscheduling), "jobSets", served(p.group, gang.FormJobSet))
	return p, nil
}

func (p *NetPack) Name() string { return Name }

// EventsToRegister: a gang waiting for its pods comes back when a pod is added or its own
// scheduling gates go (Kueue's, as it admits the gang; the gang's other pods are activated when it
// is planned); one that did not fit, when a pod goes away (its GPUs) or a node comes.
func (p *NetPack) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add}},
		// A pod's own update (TargetPod): one PreEnqueue held back while it was gated.
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete | fwk.UpdatePodLabel}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.Delete | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}},
	}, nil
}

// collect is a pod's gang from the informer's pods.
func (p *NetPack) collect(pod *v1.Pod) (*gang.Gang, error) {
	key, _ := gang.KeyOf(pod)
	minCount := 0
	if !key.ByLabel {
		n, err := p.group.MinCount(key)
		if err != nil {
			return nil, err
		}
		minCount = n
	}
	objs, err := p.byGang.ByIndex(gang.IndexName, key.String())
	if err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*v1.Pod))
	}
	return gang.Collect(key, pods, minCount)
}

// refuse makes a gang's refusal visible where its user looks (gang.Recorder.Refuse: a
// PodScheduled=False condition on the pod, which the scheduler writes none of for a pod PreEnqueue
// keeps out of the queue, an event, the PodGroup's condition) and counts it.
func (p *NetPack) refuse(ctx context.Context, pod *v1.Pod, why string) {
	key, _ := gang.KeyOf(pod)
	p.waitsFor(key, gang.ReasonGangRefused)
	p.rec.Refuse(ctx, pod, why)
}

// PreEnqueue keeps a gang's pods out of the queue until all of them exist.
func (p *NetPack) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	key, ok := gang.KeyOf(pod)
	if !ok {
		return nil
	}
	if mutation.preEnqueueAdmits {
		return nil
	}
	if _, err := p.collect(pod); err != nil {
		if !errors.Is(err, gang.ErrIncomplete) {
			p.refuse(context.WithoutCancel(ctx), pod, err.Error())
		} else {
			p.waitsFor(key, waitIncomplete)
		}
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	return nil
}

// PreFilter plans the pod's gang (once for the whole gang) and narrows the nodes to the pod's.
func (p *NetPack) PreFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, ok := gang.KeyOf(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	a, st := p.attemptFor(ctx, key, pod, nodes)
	if st != nil {
		return nil, st
	}
	p.activate(ctx, a, pod)
	node, ok := a.plan.Node[pod.UID]
	if !ok {
		// A pod that came after the plan: the gang is planned anew once this try ends.
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s was planned without pod %s; it is planned again when the current try ends", key, pod.Name))
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
}

func (p *NetPack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// attemptFor is the gang's current try: the one in memory while it still fits, else the plan
// the gang's pods carry in the API (a plan this or another scheduler wrote before binding the
// gang's first pod: resumed whole, or abandoned whole while none of its pods is bound), else a new
// plan.
func (p *NetPack) attemptFor(ctx context.Context, key gang.Key, pod *v1.Pod, nodes []fwk.NodeInfo) (*attempt, *fwk.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	maxAge := dur(p.args.PermitTimeout, time.Minute)
	if a := p.plans[key]; a != nil {
		why := a.stale(key, nodes, maxAge)
		if why == "" {
			return a, nil
		}
		klog.FromContext(ctx).Info("NetPack plans a gang anew", "gang", key.String(), "why", why)
		delete(p.plans, key)
	}
	g, err := p.collect(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	saved, err := gang.PlanOf(g)
	if err != nil {
		p.refuse(context.WithoutCancel(ctx), pod, err.Error())
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if saved != nil {
		a := newAttempt(saved, g)
		why := a.stale(key, nodes, maxAge)
		if why == "" {
			klog.FromContext(ctx).Info("NetPack resumes a gang's plan from its pods", "gang", key.String(), "id", saved.ID, "bound", a.bound.Len())
			p.plans[key] = a
			return a, nil
		}
		if a.bound.Len() > 0 {
			err := fmt.Errorf("gang %s: %w: %s, and %d of its pods are bound", key, gang.ErrBrokenPlan, why, a.bound.Len())
			p.refuse(context.WithoutCancel(ctx), pod, err.Error())
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
		}
		klog.FromContext(ctx).Info("NetPack abandons a gang's plan whole; none of its pods is bound", "gang", key.String(), "id", saved.ID, "why", why)
	}
	start := time.Now()
	if !p.live.Synced() { // only at start: the scheduler waits for its informers, not for our handlers
		_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return p.live.Synced(), nil })
	}
	v, err := p.live.View(g)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	refused := v.Refused
	for _, s := range v.Skipped {
		klog.FromContext(ctx).Info("NetPack: a running gang does not fit its nodes' GPUs; left out", "err", s)
	}
	plan, err := v.Place(p.cfg, g, fmt.Sprintf("%s#%d", key, time.Now().UnixNano()))
	if err != nil {
		code := fwk.Unschedulable
		if !errors.Is(err, gang.ErrNoFit) || g.GPUs() > v.Cluster.TotalGPUs() {
			code = fwk.UnschedulableAndUnresolvable
		}
		msg := err.Error()
		if len(refused) > 0 {
			first := slices.Sorted(maps.Keys(refused))[0]
			msg += fmt.Sprintf(" (%d nodes refused, e.g. %s)", len(refused), refused[first])
		}
		p.planMade(context.WithoutCancel(ctx), key, start, nil, msg)
		return nil, fwk.NewStatus(code, msg)
	}
	for _, why := range plan.Why {
		reason := "NetPackINAOff"
		if strings.HasPrefix(why, "PS on node") {
			reason = "NetPackPSMoved"
		}
		p.h.EventRecorder().Eventf(g.PS, nil, v1.EventTypeWarning, reason, "Scheduling", "gang %s: %s", key, why)
	}
	klog.FromContext(ctx).Info("NetPack planned a gang", "gang", key.String(), "plan", plan.String(), "id", plan.ID, "refusedNodes", len(refused))
	p.planMade(context.WithoutCancel(ctx), key, start, plan, "")
	a := newAttempt(plan, g)
	p.plans[key] = a
	return a, nil
}

func newAttempt(plan *gang.Plan, g *gang.Gang) *attempt {
	a := &attempt{plan: plan, made: time.Now(), pods: map[types.UID]*v1.Pod{}, gpus: map[types.UID]int{},
		reserved: sets.New[types.UID](), bound: sets.New[types.UID]()}
	for _, pod := range g.Pods() {
		a.pods[pod.UID] = pod
		a.gpus[pod.UID] = gang.PodGPUs(pod)
		if pod.Spec.NodeName != "" {
			a.bound.Insert(pod.UID)
		}
	}
	return a
}

func (p *NetPack) current(pod *v1.Pod) (*attempt, gang.Key) {
	key, ok := gang.KeyOf(pod)
	if !ok {
		return nil, key
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plans[key], key
}

// Filter passes only the node the plan gives the pod.
func (p *NetPack) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	a, key := p.current(pod)
	if a == nil {
		if _, ok := gang.KeyOf(pod); ok {
			return fwk.NewStatus(fwk.Unschedulable, "gang "+key.String()+" has no plan")
		}
		return nil
	}
	if want := a.plan.Node[pod.UID]; want != ni.Node().Name {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("NetPack places pod %s of gang %s on %s (%s)", pod.Name, key, want, a.plan))
	}
	return nil
}

// Score gives the planned node the highest score (Filter has left no other for a gang's pod).
func (p *NetPack) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if a, _ := p.current(pod); a != nil && a.plan.Node[pod.UID] == ni.Node().Name {
		return fwk.MaxNodeScore, nil
	}
	return 0, nil
}

func (p *NetPack) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve counts the pod towards its gang.
func (p *NetPack) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	p.live.Assume(pod, node) // the view counts the pod's GPUs from now, as the framework's cache does
	key, ok := gang.KeyOf(pod)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.plans[key]
	if a == nil || a.plan.Node[pod.UID] != node {
		return fwk.NewStatus(fwk.Unschedulable, "gang "+key.String()+": the plan changed")
	}
	a.reserved.Insert(pod.UID)
	return nil
}

// Unreserve takes the pod off its gang's count and rejects the gang's pods waiting at Permit: a
// gang runs with all its pods or none. The plan stays while it still fits (attempt.stale): the
// scheduler also unreserves pods when it reverts a placement it was only evaluating.
func (p *NetPack) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.live.Forget(pod.UID)
	key, ok := gang.KeyOf(pod)
	if !ok {
		return
	}
	p.mu.Lock()
	a := p.plans[key]
	if a == nil || !a.reserved.Has(pod.UID) || a.bound.Has(pod.UID) {
		p.mu.Unlock()
		return
	}
	a.reserved.Delete(pod.UID)
	p.mu.Unlock()
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if k, ok := gang.KeyOf(wp.GetPod()); ok && k == key {
			wp.Reject(Name, "gang "+key.String()+": pod "+pod.Name+" was not scheduled")
		}
	})
}

// Permit holds each pod until every pod of its gang has reserved its planned node, then lets
// them all go.
func (p *NetPack) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	a, key := p.current(pod)
	if a == nil {
		if _, ok := gang.KeyOf(pod); ok {
			return fwk.NewStatus(fwk.Unschedulable, "gang "+key.String()+" has no plan"), 0
		}
		return nil, 0
	}
	if mutation.permitAllows {
		return nil, 0
	}
	p.mu.Lock()
	reserved := a.reserved.Union(a.bound).Len()
	p.mu.Unlock()
	if reserved < len(a.plan.Node) {
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("gang %s: %d of %d pods placed", key, reserved, len(a.plan.Node))),
			dur(p.args.PermitTimeout, time.Minute)
	}
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if k, ok := gang.KeyOf(wp.GetPod()); ok && k == key {
			wp.Allow(Name)
		}
	})
	return nil, 0
}

// PreBindPreFlight: the plugin writes the plan onto every pod of a gang.
func (p *NetPack) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if a, _ := p.current(pod); a == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreBind writes the plan onto every pod of the gang (the first PreBind of the try does, before
// any pod of it is bound: from then on the plan is state in the API that any scheduler resumes),
// then waits for the operator to have installed the gang on the switches (ReadyAnnotation equal
// to the plan), so the pod's containers start with their switch job, slots and PS address in
// place. A node of the plan that is gone by then fails the bind: the whole try is given up
// (Unreserve) and the gang planned anew, none of it bound to a node that is no more.
func (p *NetPack) PreBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	a, key := p.current(pod)
	if a == nil {
		return nil
	}
	a.written.Do(func() {
		for uid, gp := range a.pods {
			if a.bound.Has(uid) && gp.Annotations[gang.PlanAnnotation] == a.plan.ID {
				continue
			}
			if err := gang.Annotate(ctx, p.h.ClientSet(), gp, a.plan.Annotations(gp)); err != nil {
				a.err = fmt.Errorf("writing the plan of gang %s onto pod %s: %w", key, gp.Name, err)
				return
			}
		}
	})
	if a.err != nil {
		p.drop(key, a)
		return fwk.AsStatus(a.err)
	}
	gone := func() error {
		for _, n := range sets.List(sets.New(slices.Collect(maps.Values(a.plan.Node))...)) {
			if _, err := p.nodes.Get(n); apierrors.IsNotFound(err) {
				return fmt.Errorf("gang %s: node %s of plan %s is gone; the gang is planned anew", key, n, a.plan.ID)
			}
		}
		return nil
	}
	if p.args.WaitForOperator != nil && !*p.args.WaitForOperator {
		if err := gone(); err != nil {
			p.drop(key, a)
			return fwk.NewStatus(fwk.Unschedulable, err.Error())
		}
		return nil
	}
	timeout := dur(p.args.ReadyTimeout, time.Minute)
	p.waitsFor(key, waitSwitchJob)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := gone(); err != nil {
			return false, err
		}
		cur, err := p.pods.Pods(pod.Namespace).Get(pod.Name)
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod deleted")
		}
		return err == nil && cur.Annotations[gang.ReadyAnnotation] == a.plan.ID, nil
	})
	if err != nil {
		p.drop(key, a)
		return fwk.AsStatus(fmt.Errorf("gang %s: plan %s not bound: %w", key, a.plan.ID, err))
	}
	return nil
}

// drop forgets a try (if it is still the gang's): its next pod plans the gang anew, or resumes
// the plan its pods carry.
func (p *NetPack) drop(key gang.Key, a *attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plans[key] == a {
		delete(p.plans, key)
	}
}

// PostBind forgets a gang's plan once every pod of it is bound: from then on the pods themselves
// are the gang's placement (the view reads them).
func (p *NetPack) PostBind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	key, ok := gang.KeyOf(pod)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.plans[key]; a != nil {
		a.bound.Insert(pod.UID)
		if a.bound.Len() == len(a.plan.Node) {
			delete(p.plans, key)
			gangsBound.Inc()
			p.waitsFor(key, "")
		}
	}
}
