package plugin

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/inapack/inapack/kube/gang"
)

// customForms adds the gang forms of custom resources the API server serves (a scheduler-plugins
// PodGroup, a JobSet: gang/forms.go) to g, read through a dynamic informer factory of the
// plugin's own, started and synced here (the scheduler's typed factory knows no custom resource).
func customForms(ctx context.Context, h fwk.Handle, g gang.PodGroups) (gang.PodGroups, error) {
	dyn, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return g, err
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	if g, err = g.WithCustom(h.ClientSet().Discovery(), f); err != nil {
		return g, err
	}
	f.Start(ctx.Done())
	// An informer the API server refuses to list for (RBAC) never syncs: fail the start, saying so.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for r, ok := range f.WaitForCacheSync(sctx.Done()) {
		if !ok {
			return g, fmt.Errorf("NetPack: %s did not sync within a minute (may the scheduler list and watch them? deploy/scheduler/rbac.yaml)", r.GroupResource())
		}
	}
	return g, nil
}

// customEvents bring back a gang waiting for its PodGroup or JobSet when one is created or
// changed (kube-scheduler watches a resource named so with a dynamic informer of its own).
func customEvents(g gang.PodGroups) []fwk.ClusterEventWithHint {
	var out []fwk.ClusterEventWithHint
	for _, r := range g.Resources {
		out = append(out, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.EventResource(r), ActionType: fwk.Add | fwk.Update}})
	}
	return out
}
