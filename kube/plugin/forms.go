package plugin

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/inapack/inapack/kube/gang"
)

// customForms adds the gang forms of custom resources the API server serves (a scheduler-plugins
// PodGroup, a JobSet: gang/forms.go) to g, read through a dynamic informer factory of the
// plugin's own, started and synced here (the scheduler's typed factory knows no custom resource).
// When such an object comes or changes, the pending pods of its gang (found in byGang) are
// moved back to the active queue: pods created before their PodGroup wait for it at PreEnqueue,
// and only this informer's store (the one MinCount reads) is sure to hold it when they come back.
func customForms(ctx context.Context, h fwk.Handle, g gang.PodGroups, byGang cache.Indexer) (gang.PodGroups, error) {
	dyn, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return g, err
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	if g, err = g.WithCustom(h.ClientSet().Discovery(), f); err != nil {
		return g, err
	}
	logger := klog.FromContext(ctx)
	for _, form := range []gang.Form{gang.FormCoscheduling, gang.FormJobSet} {
		r, ok := g.Served(form)
		if !ok {
			continue
		}
		// The queue (h's PodActivator) is set after New returns; byGang holds pods only once the
		// scheduler's informers run, after that, so no Activate comes before the queue.
		activate := func(obj any) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			key := gang.Key{Namespace: u.GetNamespace(), Name: u.GetName(), Form: form}
			objs, err := byGang.ByIndex(gang.IndexName, key.String())
			if err != nil || len(objs) == 0 {
				return
			}
			pending := map[string]*v1.Pod{}
			for _, o := range objs {
				if p := o.(*v1.Pod); p.Spec.NodeName == "" {
					pending[p.Namespace+"/"+p.Name] = p
				}
			}
			if len(pending) > 0 {
				h.Activate(logger, pending)
			}
		}
		_, err := f.ForResource(r).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: activate,
			UpdateFunc: func(_, obj any) { activate(obj) }})
		if err != nil {
			return g, err
		}
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

func served(g gang.PodGroups, f gang.Form) bool {
	_, ok := g.Served(f)
	return ok
}
