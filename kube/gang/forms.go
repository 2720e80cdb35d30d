package gang

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
)

// Gangs as users submit them, besides a scheduling.k8s.io PodGroup and the JobLabel: a
// scheduler-plugins PodGroup (what Kubeflow Trainer's TrainJob and the Training Operator's
// PyTorchJob make for gang scheduling) and a JobSet. Both are custom resources, read through a
// dynamic informer (no typed client of theirs is linked): only the fields the gang's size needs.
// The PS is, in every form, the pod labelled RoleLabel=RolePS (in a JobSet, the pod template of
// the PS's replicatedJob carries the label).
type Form string

const (
	// FormPodGroup is a scheduling.k8s.io PodGroup or, Key.ByLabel, the JobLabel.
	FormPodGroup Form = ""
	// FormCoscheduling is a scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1): pods
	// labelled CoschedulingLabel with its name; the gang's size is its spec.minMember.
	FormCoscheduling Form = "scheduling.x-k8s.io/PodGroup"
	// FormJobSet is a JobSet (jobset.x-k8s.io/v1alpha2): every pod labelled JobSetLabel with its
	// name (the JobSet controller labels its Jobs' pods so); the gang's size is the sum over its
	// replicatedJobs of replicas x pods per Job (parallelism, at most completions).
	FormJobSet Form = "jobset.x-k8s.io/JobSet"

	// CoschedulingLabel names a pod's scheduler-plugins PodGroup.
	CoschedulingLabel = "scheduling.x-k8s.io/pod-group"
	// JobSetLabel names a pod's JobSet; ReplicatedJobLabel its replicatedJob.
	JobSetLabel        = "jobset.sigs.k8s.io/jobset-name"
	ReplicatedJobLabel = "jobset.sigs.k8s.io/replicatedjob-name"
)

// The custom resources read.
var (
	CoschedulingResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	JobSetResource       = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// Label is the pod label that names a gang of form f ("" for FormPodGroup).
func (f Form) Label() string {
	switch f {
	case FormCoscheduling:
		return CoschedulingLabel
	case FormJobSet:
		return JobSetLabel
	}
	return ""
}

// Kind is the form's object kind as a user knows it: PodGroup, JobSet (or "label" for a
// JobLabel gang).
func (k Key) Kind() string {
	switch {
	case k.ByLabel:
		return "label"
	case k.Form == FormJobSet:
		return "JobSet"
	}
	return "PodGroup"
}

// WithCustom adds the custom forms the API server serves (asked through disc) with their
// informers from f, to be started (f.Start) by the caller: an informer of a resource the server
// does not serve never syncs, so none is made for it.
func (g PodGroups) WithCustom(disc discovery.DiscoveryInterface, f dynamicinformer.DynamicSharedInformerFactory) (PodGroups, error) {
	for _, form := range []Form{FormCoscheduling, FormJobSet} {
		r := form.resource()
		ok, err := served(disc, r)
		if err != nil {
			return g, err
		}
		if !ok {
			continue
		}
		l := f.ForResource(r).Lister()
		if form == FormJobSet {
			g.jobSets = l
		} else {
			g.coscheduling = l
		}
	}
	return g, nil
}

// Served is the resource of a custom form and whether WithCustom found it served.
func (g PodGroups) Served(f Form) (schema.GroupVersionResource, bool) {
	switch f {
	case FormCoscheduling:
		return CoschedulingResource, g.coscheduling != nil
	case FormJobSet:
		return JobSetResource, g.jobSets != nil
	}
	return schema.GroupVersionResource{}, false
}

func (f Form) resource() schema.GroupVersionResource {
	if f == FormJobSet {
		return JobSetResource
	}
	return CoschedulingResource
}

func served(disc discovery.DiscoveryInterface, r schema.GroupVersionResource) (bool, error) {
	res, err := disc.ServerResourcesForGroupVersion(r.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", r.GroupVersion(), err)
	}
	for _, a := range res.APIResources {
		if a.Name == r.Resource {
			return true, nil
		}
	}
	return false, nil
}

// customMinCount is the size of a gang of a custom form, from its object.
func (g PodGroups) customMinCount(key Key) (int, error) {
	l, r := g.coscheduling, CoschedulingResource
	if key.Form == FormJobSet {
		l, r = g.jobSets, JobSetResource
	}
	if l == nil {
		return 0, fmt.Errorf("gang %s: pods name a %s, but the scheduler found no %s served when it started (install its CRD, then restart the scheduler)",
			key, key.Form, r.GroupResource())
	}
	obj, err := l.ByNamespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("%w: %s %s does not exist yet", ErrIncomplete, key.Form, key)
	}
	if err != nil {
		return 0, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, fmt.Errorf("gang %s: %s is a %T", key, key.Form, obj)
	}
	if key.Form == FormJobSet {
		return JobSetSize(u)
	}
	n, _, err := unstructured.NestedInt64(u.Object, "spec", "minMember")
	if err != nil || n < 0 {
		return 0, fmt.Errorf("gang %s: PodGroup spec.minMember: %v %v", key, n, err)
	}
	return int(n), nil
}

// JobSetSize is how many pods a JobSet runs at once: over its replicatedJobs, replicas (default
// 1) times each Job's parallelism (default 1, at most its completions). A JobSet's gang is all of
// them: its PS and its workers.
func JobSetSize(js *unstructured.Unstructured) (int, error) {
	rjs, _, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	if err != nil {
		return 0, fmt.Errorf("JobSet %s/%s: spec.replicatedJobs: %w", js.GetNamespace(), js.GetName(), err)
	}
	total := 0
	for _, o := range rjs {
		rj, ok := o.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("JobSet %s/%s: a replicatedJob is a %T", js.GetNamespace(), js.GetName(), o)
		}
		num := func(def int64, path ...string) (int64, error) {
			v, found, err := unstructured.NestedFieldNoCopy(rj, path...)
			if err != nil || !found || v == nil {
				return def, err
			}
			switch n := v.(type) {
			case int64:
				return n, nil
			case float64: // JSON numbers decoded without the API machinery's conversion
				return int64(n), nil
			}
			return 0, fmt.Errorf("%v is a %T", path, v)
		}
		replicas, err := num(1, "replicas")
		if err != nil {
			return 0, fmt.Errorf("JobSet %s/%s: replicatedJob %v: %w", js.GetNamespace(), js.GetName(), rj["name"], err)
		}
		par, err := num(1, "template", "spec", "parallelism")
		if err != nil {
			return 0, fmt.Errorf("JobSet %s/%s: replicatedJob %v: %w", js.GetNamespace(), js.GetName(), rj["name"], err)
		}
		if c, err := num(-1, "template", "spec", "completions"); err == nil && c >= 0 && c < par {
			par = c
		}
		if replicas < 0 || par < 0 {
			return 0, fmt.Errorf("JobSet %s/%s: replicatedJob %v: replicas %d, parallelism %d", js.GetNamespace(), js.GetName(), rj["name"], replicas, par)
		}
		total += int(replicas * par)
	}
	return total, nil
}

// sizeName is where a gang's size comes from, as its user wrote it.
func (k Key) sizeName() string {
	switch k.Form {
	case FormCoscheduling:
		return "PodGroup minMember"
	case FormJobSet:
		return "JobSet size (replicas x parallelism)"
	}
	return "minCount"
}

// tooMany says what to do about a gang with more pods than its size.
func (k Key) tooMany() string {
	if k.Form == FormJobSet {
		return "delete the pods its Jobs did not make"
	}
	return "set " + k.sizeName() + " to the pod count, or delete the pods beyond it"
}
