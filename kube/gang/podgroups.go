package gang

import (
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	schedlisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
)

// PodGroups reads gangs' PodGroups where the API server serves them (scheduling.k8s.io/v1beta1,
// the GenericWorkload gate); elsewhere only label gangs exist. The informer is asked for only
// when the API is there, since an informer of an unserved resource never syncs.
type PodGroups struct {
	lister schedlisters.PodGroupLister
	// The custom forms' objects (forms.go; nil where not served).
	coscheduling, jobSets cache.GenericLister
}

// NewPodGroups asks disc whether PodGroups are served and, if so, takes their lister from f
// (start f afterwards).
func NewPodGroups(disc discovery.DiscoveryInterface, f informers.SharedInformerFactory) (PodGroups, error) {
	res, err := disc.ServerResourcesForGroupVersion(schedulingv1beta1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return PodGroups{}, nil
	}
	if err != nil {
		return PodGroups{}, fmt.Errorf("discovering PodGroups: %w", err)
	}
	for _, r := range res.APIResources {
		if r.Name == "podgroups" {
			return PodGroups{lister: f.Scheduling().V1beta1().PodGroups().Lister()}, nil
		}
	}
	return PodGroups{}, nil
}

// Enabled: the API server serves PodGroups.
func (g PodGroups) Enabled() bool { return g.lister != nil }

// MinCount is a PodGroup gang's minimum; 0 for a PodGroup without the gang policy (a gang of all
// its pods). A PodGroup not created yet is ErrIncomplete.
func (g PodGroups) MinCount(key Key) (int, error) {
	if key.Form != FormPodGroup {
		return g.customMinCount(key)
	}
	if g.lister == nil {
		return 0, fmt.Errorf("gang %s: pods name PodGroup %s, but the API server serves no PodGroups (enable the GenericWorkload feature gate, or use the %s label)", key, key.Name, JobLabel)
	}
	pg, err := g.lister.PodGroups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("%w: PodGroup %s does not exist yet", ErrIncomplete, key)
	}
	if err != nil {
		return 0, err
	}
	if gp := pg.Spec.SchedulingPolicy.Gang; gp != nil {
		return int(gp.MinCount), nil
	}
	return 0, nil
}
