package extender

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/inapack/inapack/kube/gang"
)

// Bind binds a pod kube-scheduler placed. A pod of a gang is bound only on its planned node, once
// every pod of the gang has reached bind (kube-scheduler binds each pod in its own goroutine, so
// they wait for one another here, as the plugin's pods do at Permit), with the plan written onto
// every pod of the gang before the first is bound (from then on the plan is state in the API
// that the extender resumes after a restart) and, unless WaitForOperator is off, the operator's
// Ready on it. A gang whose pods do not all arrive within GangTimeout, or a node of whose plan is
// deleted meanwhile, is given up: every waiting bind fails, kube-scheduler schedules the pods
// again, and the gang is planned anew.
func (e *Extender) Bind(ctx context.Context, args *extenderv1.ExtenderBindingArgs) error {
	pod, err := e.cs.CoreV1().Pods(args.PodNamespace).Get(ctx, args.PodName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pod.UID != args.PodUID {
		return fmt.Errorf("pod %s/%s is not the one scheduled (uid %s, want %s)", args.PodNamespace, args.PodName, pod.UID, args.PodUID)
	}
	if key, ok := gang.KeyOf(pod); ok {
		if err := e.holdForGang(ctx, pod, key, args.Node); err != nil {
			e.log.Warn("extender: bind refused", "pod", args.PodNamespace+"/"+args.PodName, "node", args.Node, "err", err)
			return err
		}
	}
	return e.cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: args.Node},
	}, metav1.CreateOptions{})
}

func (e *Extender) holdForGang(ctx context.Context, pod *v1.Pod, key gang.Key, node string) error {
	e.mu.Lock()
	a := e.plans[key]
	if a == nil || a.plan.Node[pod.UID] != node {
		e.mu.Unlock()
		return fmt.Errorf("gang %s: no current plan puts pod %s on %s (the try was given up); it is scheduled again", key, pod.Name, node)
	}
	a.arrived.Insert(pod.UID)
	if a.arrived.Len() == len(a.plan.Node) && !closed(a.all) {
		close(a.all)
	}
	left := e.cfg.GangTimeout - time.Since(a.made)
	e.mu.Unlock()

	timer := time.NewTimer(max(left, 0))
	defer timer.Stop()
	select {
	case <-a.all: // the gang is complete, even if its time is up as well
	default:
		if err := e.waitForGang(ctx, key, a, pod, timer.C); err != nil {
			return err
		}
	}
	if err := e.writePlan(ctx, key, a); err != nil {
		e.drop(key, a)
		return err
	}
	if !e.cfg.WaitForOperator {
		if err := e.gone(key, a); err != nil {
			e.drop(key, a)
			return err
		}
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, e.cfg.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.gone(key, a); err != nil {
			return false, err
		}
		cur, err := e.pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || cur.UID != pod.UID {
			return false, nil
		}
		return cur.Annotations[gang.ReadyAnnotation] == a.plan.ID, nil
	})
	if err != nil {
		e.drop(key, a)
		if wait.Interrupted(err) {
			return fmt.Errorf("gang %s: the operator did not install plan %s on the switches within %v: %w", key, a.plan.ID, e.cfg.ReadyTimeout, err)
		}
		return fmt.Errorf("gang %s: plan %s not bound: %w", key, a.plan.ID, err)
	}
	return nil
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writePlan writes a's plan onto every pod of the gang not bound yet, once per try, when every
// pod has reached bind and before any is bound: a restart between two binds then finds the whole
// plan in the API and resumes it (attemptLocked), and one during the writing finds pods that
// disagree, none bound, and plans anew.
func (e *Extender) writePlan(ctx context.Context, key gang.Key, a *attempt) error {
	a.written.Do(func() {
		for _, uid := range slices.Sorted(maps.Keys(a.pods)) {
			p := a.pods[uid]
			if p.Spec.NodeName != "" { // bound before a restart, by this plan (PlanOf)
				continue
			}
			if err := gang.Annotate(ctx, e.cs, p, a.plan.Annotations(p)); err != nil {
				a.err = fmt.Errorf("writing the plan of gang %s onto pod %s: %w", key, p.Name, err)
				return
			}
		}
	})
	return a.err
}

// gone says which node of a's plan is deleted (nil: none): no pod of the gang is bound to a node
// that is no more; the gang is planned anew.
func (e *Extender) gone(key gang.Key, a *attempt) error {
	for _, n := range slices.Sorted(maps.Keys(sets.New(slices.Collect(maps.Values(a.plan.Node))...))) {
		if _, err := e.nodes.Get(n); apierrors.IsNotFound(err) {
			return fmt.Errorf("gang %s: node %s of plan %s is gone; the gang is planned anew", key, n, a.plan.ID)
		}
	}
	return nil
}

// waitForGang waits until every pod of a's plan has reached bind, a is given up, or expired fires.
func (e *Extender) waitForGang(ctx context.Context, key gang.Key, a *attempt, pod *v1.Pod, expired <-chan time.Time) error {
	select {
	case <-a.all:
		return nil
	case <-a.dropped:
		return fmt.Errorf("gang %s: the try was given up while pod %s waited for the rest", key, pod.Name)
	case <-expired:
		e.drop(key, a)
		return fmt.Errorf("gang %s: %d of %d pods reached bind within %v; the gang is planned again (all pods or none)",
			key, e.arrivedCount(a), len(a.plan.Node), e.cfg.GangTimeout)
	case <-ctx.Done():
		e.drop(key, a)
		return ctx.Err()
	}
}

func (e *Extender) drop(key gang.Key, a *attempt) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropLocked(key, a)
}

func (e *Extender) arrivedCount(a *attempt) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return a.arrived.Len()
}
