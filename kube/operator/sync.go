package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/kube/gang"
)

// syncRequest is the comparison of the gangs with the switch controller's job list. No plan's
// request has an empty namespace (pods have one), so it cannot be mistaken for a plan.
var syncRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "switch-controller-sync"}}

// sync compares the live gangs with the switch controller's jobs: a running gang's job the
// controller does not hold (it restarted with empty state, or someone removed the job) is added
// again, and a job of this operator's Owner that no live gang holds (its pods were forced away)
// is removed. Jobs of other owners are never touched. It runs in the reconciler's one worker, so
// no install is half way while it looks, and again every SyncInterval; a failure is retried with
// the bounded backoff.
func (r *reconciler) sync(ctx context.Context) (reconcile.Result, error) {
	lg := log.FromContext(ctx)
	jobs, err := r.cfg.Controller.Jobs(ctx)
	if err != nil {
		return reconcile.Result{}, controllerErr(err, "listing the switch controller's jobs")
	}
	var all v1.PodList
	if err := r.client.List(ctx, &all); err != nil {
		return reconcile.Result{}, err
	}
	held := r.held(&all)
	running := map[types.NamespacedName]int{} // installed plans, by their switch job
	for i := range all.Items {
		p := &all.Items[i]
		if a, ok := recorded(p); ok && controllerutil.ContainsFinalizer(p, gang.Finalizer) && p.Annotations[gang.ReadyAnnotation] == p.Annotations[InstalledAnnotation] {
			running[types.NamespacedName{Namespace: p.Namespace, Name: p.Annotations[InstalledAnnotation]}] = a.SwitchJob
		}
	}
	var errs []error
	var orphans []int
	onController := map[int]bool{}
	for _, j := range jobs {
		onController[j.ID] = true
		if j.Owner == r.cfg.Owner && !held[j.ID] {
			orphans = append(orphans, j.ID)
		}
	}
	if len(orphans) > 0 {
		// Removing is for good: ask the API server itself, not the cache, that no pod holds them.
		var fresh v1.PodList
		var opts []client.ListOption
		if r.cfg.Namespace != "" {
			opts = append(opts, client.InNamespace(r.cfg.Namespace))
		}
		if err := r.api.List(ctx, &fresh, opts...); err != nil {
			return reconcile.Result{}, err
		}
		held = r.held(&fresh)
		for _, id := range orphans {
			if held[id] {
				continue
			}
			if err := r.cfg.Controller.RemoveJob(ctx, id); err != nil && !api.IsNotFound(err) {
				errs = append(errs, controllerErr(err, "removing switch job %d, which no live gang holds", id))
				continue
			}
			lg.Info("removed a switch job of this operator that no live gang holds", "switchJob", id, "owner", r.cfg.Owner)
		}
	}
	keys := make([]types.NamespacedName, 0, len(running))
	for k := range running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return running[a] - running[b] })
	for _, k := range keys {
		if !onController[running[k]] {
			errs = append(errs, r.reinstall(ctx, k, running[k]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.cfg.SyncInterval}, nil
}

// held are the switch job ids live gangs hold: recorded by pods that keep the finalizer, or
// allocated by this process and not removed yet.
func (r *reconciler) held(pods *v1.PodList) map[int]bool {
	held := map[int]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if a, ok := recorded(p); ok && controllerutil.ContainsFinalizer(p, gang.Finalizer) {
			held[a.SwitchJob] = true
		}
	}
	for _, a := range r.allocs {
		held[a.SwitchJob] = true
	}
	return held
}

// reinstall adds a running plan's switch job, which the controller lost, again: the entries
// derived from the pods' plan and recorded allocation as at the install. A plan that is ending or
// not wholly Ready is left to its own request.
func (r *reconciler) reinstall(ctx context.Context, plan types.NamespacedName, id int) error {
	var list v1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(plan.Namespace), client.MatchingFields{planIndex: plan.Name}); err != nil {
		return err
	}
	var pods []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		// The cache may lag a removal this process just made: read each pod from the API server.
		var cur v1.Pod
		if err := r.api.Get(ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		a := cur.Annotations
		if a[gang.PlanAnnotation] != plan.Name || a[InstalledAnnotation] != plan.Name || a[gang.ReadyAnnotation] != plan.Name ||
			cur.DeletionTimestamp != nil || terminal(&cur) || !controllerutil.ContainsFinalizer(&cur, gang.Finalizer) {
			return nil
		}
		pods = append(pods, &cur)
	}
	pl, err := readPlan(plan.Name, pods)
	if err != nil || !pl.usesSwitch() {
		return nil // not whole (its request removes it) or nothing on a switch
	}
	a, ok := r.recordedOf(plan.Name, pods)
	if !ok || a.SwitchJob != id {
		return nil
	}
	topo, err := r.topology(ctx)
	if err != nil {
		return r.failed(ctx, pl.pods(), "Reinstall", plan.Name, err)
	}
	if err := r.addJob(ctx, pl, topo, a); err != nil {
		return r.failed(ctx, pl.pods(), "Reinstall", plan.Name, err)
	}
	msg := fmt.Sprintf("switch job %d was missing from the switch controller (restarted without its state?): added again", id)
	for _, p := range pl.pods() {
		r.events.Eventf(p, nil, v1.EventTypeNormal, "INAReinstalled", "Reinstall", "%s", msg)
	}
	r.report(ctx, pl.pods(), plan.Name, v1.ConditionTrue, ReasonInstalled, "Reinstall", fmt.Sprintf("plan %s: %s", plan.Name, msg))
	log.FromContext(ctx).Info("added a running gang's switch job again", "plan", plan.Name, "switchJob", id)
	return nil
}
