package plugin

import (
	"context"
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	schedlisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/inapack/inapack/kube/gang"
)

// groupSource reads PodGroups where the API server serves them (scheduling.k8s.io/v1beta1, the
// GenericWorkload gate); elsewhere only label gangs exist. The informer is asked for only when
// the API is there, since the scheduler waits for every informer's first list before it runs.
type groupSource struct{ lister schedlisters.PodGroupLister }

func newGroupSource(ctx context.Context, h fwk.Handle) groupSource {
	gv := schedulingv1beta1.SchemeGroupVersion.String()
	res, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		klog.FromContext(ctx).Info("NetPack: no PodGroup API; gangs by label only", "groupVersion", gv, "err", err)
		return groupSource{}
	}
	for _, r := range res.APIResources {
		if r.Name == "podgroups" {
			return groupSource{lister: h.SharedInformerFactory().Scheduling().V1beta1().PodGroups().Lister()}
		}
	}
	return groupSource{}
}

func (g groupSource) enabled() bool { return g.lister != nil }

// minCount is a PodGroup's gang minimum; a PodGroup without the gang policy is a gang of all its
// pods (0).
func (g groupSource) minCount(key gang.Key) (int, error) {
	if g.lister == nil {
		return 0, fmt.Errorf("gang %s: pods name PodGroup %s, but the API server serves no PodGroups (enable the GenericWorkload feature gate, or use the %s label)", key, key.Name, gang.JobLabel)
	}
	pg, err := g.lister.PodGroups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("%w: PodGroup %s does not exist yet", gang.ErrIncomplete, key)
	}
	if err != nil {
		return 0, err
	}
	if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil {
		return int(gp.MinCount), nil
	}
	return 0, nil
}
