package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/scheduler"
)

// reconciler follows one plan per request (the request's name is the plan id).
type reconciler struct {
	cfg    Config
	client client.Client // cached reads
	api    client.Reader // uncached: the topology ConfigMap
	events events.EventRecorder
	obs    *observer // metrics and PodGroup conditions (observe.go)
	// allocs are the allocations this process made, until their job is removed: the cache may not
	// show the annotations that record them yet when the next plan is allocated.
	allocs map[string]allocation
	// last is the switch job id given last (0: none yet).
	last int
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req == syncRequest {
		return r.sync(ctx)
	}
	id := req.Name
	var list v1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingFields{planIndex: id}); err != nil {
		return reconcile.Result{}, err
	}
	var members, planned []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Annotations[InstalledAnnotation] == id && controllerutil.ContainsFinalizer(p, gang.Finalizer) {
			members = append(members, p)
		}
		if p.Annotations[gang.PlanAnnotation] == id {
			planned = append(planned, p)
		}
	}
	slices.SortFunc(planned, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(members)+len(planned) == 0 {
		r.obs.forget(id)
	}
	if len(members) > 0 {
		return r.follow(ctx, id, members, planned)
	}
	return r.install(ctx, id, planned)
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// install puts a complete plan on the switches: finalizer and wiring on every pod first, then
// the job on the switch controller, then Ready. Every step may be redone: a restart in between
// finds the wiring and carries on with it.
func (r *reconciler) install(ctx context.Context, id string, planned []*v1.Pod) (reconcile.Result, error) {
	lg := log.FromContext(ctx)
	for _, p := range planned {
		if p.DeletionTimestamp != nil || terminal(p) {
			return reconcile.Result{}, nil // a plan that lost a pod before it ran: the scheduler plans anew
		}
		if other := p.Annotations[InstalledAnnotation]; other != "" && other != id && controllerutil.ContainsFinalizer(p, gang.Finalizer) {
			// The pod still carries the job of a plan given up; that plan's removal comes first.
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
	}
	pl, err := readPlan(id, planned)
	var inc errIncomplete
	if errors.As(err, &inc) {
		return reconcile.Result{}, nil // the plugin is still writing the plan; the next pod's update brings us back
	}
	if err != nil {
		// Retrying cannot mend it: the next change to the pods brings the plan back.
		_ = r.failed(ctx, planned, "Install", id, refuse(ReasonPlanInvalid, fmt.Errorf("cannot be installed: %w", err)))
		return reconcile.Result{}, nil
	}
	topo, err := r.topology(ctx)
	if err != nil {
		return reconcile.Result{}, r.failed(ctx, planned, "Install", id, err)
	}
	a, err := r.allocate(ctx, pl, topo)
	if err != nil {
		return reconcile.Result{}, r.failed(ctx, planned, "Install", id, err)
	}
	lg.Info("installing a plan", "plan", id, "switchJob", a.SwitchJob, "slots", fmt.Sprintf("%d+%d", a.SlotBase, a.Window),
		"switches", a.Switches)
	return r.complete(ctx, pl, topo, a)
}

// complete carries an allocated plan through to Ready (each step skipped where already done).
func (r *reconciler) complete(ctx context.Context, pl *plan, topo *topology.Topology, a allocation) (reconcile.Result, error) {
	rv, err := r.rendezvous(ctx, pl, a)
	if err != nil {
		return reconcile.Result{}, err
	}
	wiring, err := pl.wiring(topo, a, r.cfg.Iface, rv)
	if err != nil {
		return reconcile.Result{}, r.failed(ctx, pl.pods(), "Install", pl.id, refuse(ReasonNotInTopology, err))
	}
	// 1. The finalizer and the wiring, the record of the switch job, before anything is on a switch.
	pods := pl.pods()
	for i, p := range pods {
		q, err := r.patch(ctx, p, func(q *v1.Pod) {
			controllerutil.AddFinalizer(q, gang.Finalizer)
			for k, v := range wiring[p.Name] {
				q.Annotations[k] = v
			}
			rv.label(pl, q)
		})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("plan %s: pod %s: %w", pl.id, p.Name, err)
		}
		pods[i] = q
	}
	// 2. The job on the switches.
	if pl.usesSwitch() {
		if err := r.addJob(ctx, pl, topo, a); err != nil {
			return reconcile.Result{}, r.failed(ctx, pods, "Install", pl.id, err)
		}
	}
	// 3. Ready: the plugin binds the pods.
	for _, p := range pods {
		if p.Annotations[gang.ReadyAnnotation] == pl.id {
			continue
		}
		if _, err := r.patch(ctx, p, func(q *v1.Pod) { q.Annotations[gang.ReadyAnnotation] = pl.id }); err != nil {
			return reconcile.Result{}, fmt.Errorf("plan %s: pod %s: %w", pl.id, p.Name, err)
		}
		r.events.Eventf(p, nil, v1.EventTypeNormal, "INAInstalled", "Install",
			"switch job %d on %v (slots %d..%d, priority cap %d, INA %v)", a.SwitchJob, a.Switches, a.SlotBase,
			a.SlotBase+a.Window-1, pl.priorityCap(), pl.ina)
	}
	r.report(ctx, pods, pl.id, v1.ConditionTrue, ReasonInstalled, "Install", fmt.Sprintf("plan %s: switch job %d on %v (slots %d..%d)",
		pl.id, a.SwitchJob, a.Switches, a.SlotBase, a.SlotBase+a.Window-1))
	log.FromContext(ctx).Info("plan installed", "plan", pl.id, "switchJob", a.SwitchJob)
	return reconcile.Result{}, nil
}

// pods are the plan's pods, PS first, then workers by rank.
func (pl *plan) pods() []*v1.Pod { return append([]*v1.Pod{pl.ps}, pl.workers...) }

// follow watches an installed plan: it finishes an install cut short, and removes the job when
// it ended.
func (r *reconciler) follow(ctx context.Context, id string, members, planned []*v1.Pod) (reconcile.Result, error) {
	var reason string
	superseded, failed := false, false
	for _, p := range members {
		if p.Annotations[gang.PlanAnnotation] != id {
			superseded = true
			reason = fmt.Sprintf("the gang was planned anew (pod %s now has plan %s)", p.Name, p.Annotations[gang.PlanAnnotation])
		}
	}
	for _, p := range members {
		switch {
		case superseded || failed:
		case p.DeletionTimestamp != nil:
			failed, reason = true, fmt.Sprintf("pod %s was deleted", p.Name)
		case p.Status.Phase == v1.PodFailed:
			failed, reason = true, fmt.Sprintf("pod %s failed%s", p.Name, exitOf(p))
		}
	}
	if superseded {
		return r.remove(ctx, id, members, planned, reason, func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	}
	if failed {
		return r.remove(ctx, id, members, planned, reason, func(*v1.Pod) bool { return true })
	}
	pl, err := readPlan(id, planned)
	if err != nil {
		// A pod of an installed plan is gone (its finalizer was taken off by hand).
		return r.remove(ctx, id, members, planned, fmt.Sprintf("the plan's pods are no longer whole: %v", err), func(*v1.Pod) bool { return true })
	}
	done := true
	for _, w := range pl.workers {
		done = done && w.Status.Phase == v1.PodSucceeded
	}
	if done {
		// The PS serves until stopped: nothing is left for it to do.
		return r.remove(ctx, id, members, planned, "every worker succeeded", func(*v1.Pod) bool { return true })
	}
	ready := len(members) == len(planned)
	for _, p := range members {
		ready = ready && p.Annotations[gang.ReadyAnnotation] == id
	}
	if ready {
		return reconcile.Result{}, nil // running
	}
	// An install cut short (an operator restart, an API error): carry on with its allocation.
	a, ok := r.recordedOf(id, members)
	if !ok {
		return reconcile.Result{}, fmt.Errorf("plan %s: its pods' wiring records no switch job", id)
	}
	topo, err := r.topology(ctx)
	if err != nil {
		return reconcile.Result{}, r.failed(ctx, planned, "Install", id, err)
	}
	if a.Switches, err = pl.switches(topo); err != nil {
		return reconcile.Result{}, r.failed(ctx, planned, "Install", id, refuse(ReasonNotInTopology, err))
	}
	r.allocs[id] = a
	return r.complete(ctx, pl, topo, a)
}

// recordedOf is the allocation of plan id: this process's, else the one its pods record.
func (r *reconciler) recordedOf(id string, members []*v1.Pod) (allocation, bool) {
	if a, ok := r.allocs[id]; ok {
		return a, true
	}
	for _, p := range members {
		if a, ok := recorded(p); ok {
			return a, true
		}
	}
	return allocation{}, false
}

// remove takes an ended plan's job off the switches (entries and slots), deletes the plan's pods
// that are still running and doomed says must go, and then lets go of the pods (finalizers; the
// wiring too on pods that belong to a newer plan now).
func (r *reconciler) remove(ctx context.Context, id string, members, planned []*v1.Pod, reason string, doomed func(*v1.Pod) bool) (reconcile.Result, error) {
	a, ok := r.recordedOf(id, members)
	if !ok {
		return reconcile.Result{}, r.failed(ctx, members, "Remove", id, refuse(ReasonPlanInvalid, fmt.Errorf(
			"ended (%s), but its pods' wiring records no switch job: remove it by hand, then the finalizer %s", reason, gang.Finalizer)))
	}
	// Not found (the controller's answer 404, nothing else) is a job that never reached the switch
	// controller, one it lost, or one without entries: nothing of it is on a switch.
	if err := r.cfg.Controller.RemoveJob(ctx, a.SwitchJob); err != nil && !api.IsNotFound(err) {
		return reconcile.Result{}, r.failed(ctx, members, "Remove", id,
			controllerErr(err, "ended (%s); removing switch job %d", reason, a.SwitchJob))
	}
	r.report(ctx, members, id, v1.ConditionFalse, ReasonRemoved, "Remove", fmt.Sprintf("plan %s: switch job %d removed: %s", id, a.SwitchJob, reason))
	for _, p := range planned {
		if p.DeletionTimestamp != nil || terminal(p) || !doomed(p) {
			continue
		}
		if err := r.client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("plan %s: deleting pod %s: %w", id, p.Name, err)
		}
	}
	for _, p := range members {
		if err := r.release(ctx, p, p.Annotations[gang.PlanAnnotation] != id); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("plan %s: pod %s: %w", id, p.Name, err)
		}
		r.events.Eventf(p, nil, v1.EventTypeNormal, "INARemoved", "Remove", "switch job %d removed, its entries and slots freed: %s",
			a.SwitchJob, reason)
	}
	delete(r.allocs, id)
	log.FromContext(ctx).Info("plan removed", "plan", id, "switchJob", a.SwitchJob, "reason", reason)
	return reconcile.Result{}, nil
}

// release takes the finalizer off a pod and, for a pod of a newer plan, the old plan's wiring.
// It is a JSON patch that tests the finalizer is where the cached pod has it: a pod changed
// meanwhile in other ways (being deleted, say) is still released, and no other finalizer is lost.
func (r *reconciler) release(ctx context.Context, p *v1.Pod, clearWiring bool) error {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	var ops []op
	if i := slices.Index(p.Finalizers, gang.Finalizer); i >= 0 {
		path := "/metadata/finalizers/" + strconv.Itoa(i)
		ops = append(ops, op{"test", path, gang.Finalizer}, op{"remove", path, nil})
	}
	if clearWiring {
		for _, k := range wiringKeys {
			if _, ok := p.Annotations[k]; ok {
				ops = append(ops, op{"remove", "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), nil})
			}
		}
		if _, ok := p.Labels[gang.MasterLabel]; ok {
			ops = append(ops, op{"remove", "/metadata/labels/" + strings.ReplaceAll(gang.MasterLabel, "/", "~1"), nil})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return r.client.Patch(ctx, p.DeepCopy(), client.RawPatch(types.JSONPatchType, b))
}

// exitOf says how a failed pod's container ended, if its status says.
func exitOf(p *v1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf(" (container %s: exit code %d %s)", c.Name, t.ExitCode, strings.TrimSpace(t.Reason+" "+t.Message))
		}
	}
	if p.Status.Message != "" {
		return " (" + p.Status.Message + ")"
	}
	return ""
}

// patch applies edit to a copy of p and sends the difference, refused if p is not the pod's
// latest version (a stale cache: the request is retried). It returns the pod as stored.
func (r *reconciler) patch(ctx context.Context, p *v1.Pod, edit func(*v1.Pod)) (*v1.Pod, error) {
	q := p.DeepCopy()
	if q.Annotations == nil {
		q.Annotations = map[string]string{}
	}
	edit(q)
	if equality.Semantic.DeepEqual(p.ObjectMeta, q.ObjectMeta) {
		return p, nil
	}
	if err := r.client.Patch(ctx, q, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, err
	}
	return q, nil
}

// addJob adds the plan's switch job to the controller, as Owner's. A conflict is this job only if
// the controller holds that id as Owner's (added before a restart: the id is reserved by the
// pods' wiring); another owner's job of the same id is refused.
func (r *reconciler) addJob(ctx context.Context, pl *plan, topo *topology.Topology, a allocation) error {
	jc, err := pl.jobConfig(topo, a)
	if err != nil {
		return refuse(ReasonNotInTopology, fmt.Errorf("deriving switch job %d: %w", a.SwitchJob, err))
	}
	jc.Owner = r.cfg.Owner
	err = r.cfg.Controller.AddJob(ctx, jc)
	if err == nil || !api.IsConflict(err) {
		return controllerErr(err, "adding switch job %d", a.SwitchJob)
	}
	jobs, lerr := r.cfg.Controller.Jobs(ctx)
	if lerr != nil {
		return controllerErr(lerr, "switch job %d exists: listing the controller's jobs", a.SwitchJob)
	}
	for _, j := range jobs {
		if j.ID == a.SwitchJob && j.Owner != r.cfg.Owner {
			return refuse(ReasonSwitchJobConflict, fmt.Errorf("the switch controller holds switch job %d as %q's, not this operator's (%q)",
				a.SwitchJob, j.Owner, r.cfg.Owner))
		}
	}
	return nil
}

// topology reads topology.json from its ConfigMap.
func (r *reconciler) topology(ctx context.Context) (*topology.Topology, error) {
	var cm v1.ConfigMap
	if err := r.api.Get(ctx, r.cfg.Topology, &cm); err != nil {
		return nil, refuse(ReasonTopologyUnavailable, fmt.Errorf("topology ConfigMap %s: %w", r.cfg.Topology, err))
	}
	s, ok := cm.Data[r.cfg.TopologyKey]
	if !ok {
		return nil, refuse(ReasonTopologyUnavailable, fmt.Errorf("topology ConfigMap %s has no key %s", r.cfg.Topology, r.cfg.TopologyKey))
	}
	t, err := topology.Parse(fmt.Sprintf("ConfigMap %s, %s", r.cfg.Topology, r.cfg.TopologyKey), []byte(s))
	return t, refuse(ReasonTopologyUnavailable, err)
}

// allocate gives a plan its switch job id, the next after the one given last that no live plan
// (one whose pods hold the finalizer), no allocation of this process and no job of the switch
// controller uses (scheduler.NextSwitchJob: ids go round, as the service's do), and its
// slots by the scheduler service's rule among the live plans' slots on the same switches. A plan
// whose pods already record an allocation (an install cut short) keeps it.
func (r *reconciler) allocate(ctx context.Context, pl *plan, topo *topology.Topology) (allocation, error) {
	switches, err := pl.switches(topo)
	if err != nil {
		return allocation{}, refuse(ReasonNotInTopology, err)
	}
	if a, ok := r.allocs[pl.id]; ok {
		return a, nil
	}
	used := map[int]bool{}
	var live []scheduler.SlotRange
	var all v1.PodList
	if err := r.client.List(ctx, &all); err != nil {
		return allocation{}, err
	}
	type liveJob struct {
		a        allocation
		switches []string
	}
	jobs := map[string]*liveJob{}
	for i := range all.Items {
		p := &all.Items[i]
		inst := p.Annotations[InstalledAnnotation]
		a, ok := recorded(p)
		if !ok || !controllerutil.ContainsFinalizer(p, gang.Finalizer) {
			continue
		}
		if _, mine := r.allocs[inst]; mine {
			continue // counted below, from what this process allocated
		}
		j := jobs[inst]
		if j == nil {
			j = &liveJob{a: a}
			jobs[inst] = j
		}
		if p.Labels[gang.RoleLabel] != gang.RolePS && p.Annotations[gang.LocalAnnotation] != "true" {
			if sw, err := torOf(topo, p.Annotations[gang.NodeAnnotation]); err == nil && !slices.Contains(j.switches, sw) {
				j.switches = append(j.switches, sw)
			}
		}
	}
	for _, j := range jobs {
		used[j.a.SwitchJob] = true
		live = append(live, scheduler.SlotRange{Switches: j.switches, Base: j.a.SlotBase, Window: j.a.Window})
	}
	for _, a := range r.allocs {
		used[a.SwitchJob] = true
		live = append(live, scheduler.SlotRange{Switches: a.Switches, Base: a.SlotBase, Window: a.Window})
	}
	ctl, err := r.cfg.Controller.Jobs(ctx)
	if err != nil {
		return allocation{}, controllerErr(err, "listing the switch controller's jobs")
	}
	for _, j := range ctl {
		used[j.ID] = true
	}
	if r.last == 0 {
		// A restarted operator goes on after the highest id in use (the last given is not kept).
		for id := range used {
			r.last = max(r.last, id)
		}
	}
	id := scheduler.NextSwitchJob(r.last, func(id int) bool { return used[id] })
	if id == 0 {
		return allocation{}, refuse(ReasonNoSwitchJobFree, fmt.Errorf("no free switch job id (1..%d)", scheduler.MaxSwitchJob))
	}
	r.last = id
	win, active := window(r.cfg, topo)
	a := allocation{SwitchJob: id, Window: win, Switches: switches}
	if pl.usesSwitch() {
		a.SlotBase = scheduler.SlotBase(active, win, switches, live)
	}
	r.allocs[pl.id] = a
	return a, nil
}
