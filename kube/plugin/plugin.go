// Package plugin is NetPack as a kube-scheduler framework plugin: it places a training gang (a
// PodGroup with the gang policy, or pods sharing the inapack.io/job label) as one NetPack
// placement and holds every pod of the gang to it, all pods or none.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/inapack/inapack/kube/gang"
)

// Name is the plugin's name in a scheduler profile.
const Name = "NetPack"

// NetPack is the plugin. Its only state is the plan of each gang being scheduled: made at the
// gang's first pod, kept until every pod of it is bound or the gang is given up.
type NetPack struct {
	h     fwk.Handle
	args  Args
	cfg   gang.Config
	pods  corelisters.PodLister
	group gang.PodGroups
	// views keeps the cluster's view between gangs: rebuilding it costs several times NetPack's
	// own placement at 10,000 nodes.
	views gang.ViewCache

	mu    sync.Mutex
	plans map[gang.Key]*attempt
}

// attempt is one try at a gang: its plan and which of its pods have reserved and bound.
type attempt struct {
	plan     *gang.Plan
	made     time.Time
	gpus     map[types.UID]int
	reserved sets.Set[types.UID]
	bound    sets.Set[types.UID]
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
	var args Args
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return nil, fmt.Errorf("NetPack args: %w", err)
		}
	}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	p := &NetPack{h: h, args: args, cfg: args.Config(), plans: map[gang.Key]*attempt{},
		pods: h.SharedInformerFactory().Core().V1().Pods().Lister()}
	group, err := gang.NewPodGroups(h.ClientSet().Discovery(), h.SharedInformerFactory())
	if err != nil {
		klog.FromContext(ctx).Info("NetPack: gangs by label only", "err", err)
	}
	p.group = group
	klog.FromContext(ctx).Info("NetPack plugin", "policy", p.cfg.Policy, "podGroups", p.group.Enabled())
	return p, nil
}

func (p *NetPack) Name() string { return Name }

// EventsToRegister: a gang waiting for its pods comes back when a pod is added; one that did not
// fit, when a pod goes away (its GPUs) or a node comes.
func (p *NetPack) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete | fwk.UpdatePodLabel}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel}},
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
	// The scheduler's pod informer has no namespace index: list all, Collect keeps the gang's.
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return gang.Collect(key, pods, minCount)
}

// PreEnqueue keeps a gang's pods out of the queue until all of them exist.
func (p *NetPack) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if _, ok := gang.KeyOf(pod); !ok {
		return nil
	}
	if _, err := p.collect(pod); err != nil {
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
	node, ok := a.plan.Node[pod.UID]
	if !ok {
		// A pod that came after the plan: the gang is planned anew once this try ends.
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s was planned without pod %s; it is planned again when the current try ends", key, pod.Name))
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
}

func (p *NetPack) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// attemptFor is the gang's current try, planned now if there is none.
func (p *NetPack) attemptFor(ctx context.Context, key gang.Key, pod *v1.Pod, nodes []fwk.NodeInfo) (*attempt, *fwk.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.plans[key]; a != nil {
		why := a.stale(key, nodes, dur(p.args.PermitTimeout, time.Minute))
		if why == "" {
			return a, nil
		}
		klog.FromContext(ctx).Info("NetPack plans a gang anew", "gang", key.String(), "why", why)
	}
	g, err := p.collect(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	var ns []*v1.Node
	var assigned []*v1.Pod
	for _, ni := range nodes {
		ns = append(ns, ni.Node())
		for _, pi := range ni.GetPods() {
			assigned = append(assigned, pi.GetPod())
		}
	}
	v, err := p.views.View(p.cfg, ns, assigned)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	for _, s := range v.Skipped {
		klog.FromContext(ctx).Info("NetPack: a running gang does not fit its nodes' GPUs; left out", "err", s)
	}
	plan, err := v.Place(p.cfg, g, fmt.Sprintf("%s#%d", key, time.Now().UnixNano()))
	if err != nil {
		code := fwk.Unschedulable
		if !errors.Is(err, gang.ErrNoFit) || g.GPUs() > v.Cluster.TotalGPUs() {
			code = fwk.UnschedulableAndUnresolvable
		}
		return nil, fwk.NewStatus(code, err.Error())
	}
	for _, why := range plan.Why {
		p.h.EventRecorder().Eventf(g.PS, nil, v1.EventTypeWarning, "NetPackINAOff", "Scheduling", "gang %s: %s", key, why)
	}
	klog.FromContext(ctx).Info("NetPack planned a gang", "gang", key.String(), "plan", plan.String(), "id", plan.ID)
	a := &attempt{plan: plan, made: time.Now(), gpus: map[types.UID]int{}, reserved: sets.New[types.UID](), bound: sets.New[types.UID]()}
	for _, pod := range g.Pods() {
		a.gpus[pod.UID] = gang.PodGPUs(pod)
	}
	p.plans[key] = a
	return a, nil
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
	p.mu.Lock()
	reserved := a.reserved.Len()
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

// PreBind writes the pod's plan annotations, then waits for the operator to have installed the
// gang on the switches (ReadyAnnotation equal to the plan), so the pod's containers start with
// their switch job, slots and PS address in place.
func (p *NetPack) PreBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	a, key := p.current(pod)
	if a == nil {
		return nil
	}
	if err := gang.Annotate(ctx, p.h.ClientSet(), pod, a.plan.Annotations(pod)); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing the plan of gang %s onto pod %s: %w", key, pod.Name, err))
	}
	if p.args.WaitForOperator != nil && !*p.args.WaitForOperator {
		return nil
	}
	timeout := dur(p.args.ReadyTimeout, time.Minute)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := p.pods.Pods(pod.Namespace).Get(pod.Name)
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("pod deleted")
		}
		return err == nil && cur.Annotations[gang.ReadyAnnotation] == a.plan.ID, nil
	})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("gang %s: the operator did not install plan %s on the switches within %v: %w", key, a.plan.ID, timeout, err))
	}
	return nil
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
		}
	}
}
