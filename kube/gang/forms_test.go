package gang_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/inapack/inapack/kube/gang"
)

func obj(gvr schema.GroupVersionResource, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
	u.SetNamespace("train")
	u.SetName(name)
	return u
}

func jobSet(name string, rjs ...map[string]any) *unstructured.Unstructured {
	var list []any
	for _, rj := range rjs {
		list = append(list, rj)
	}
	return obj(gang.JobSetResource, "JobSet", name, map[string]any{"replicatedJobs": list})
}

func rj(name string, replicas, parallelism, completions int64) map[string]any {
	spec := map[string]any{}
	if parallelism >= 0 {
		spec["parallelism"] = parallelism
	}
	if completions >= 0 {
		spec["completions"] = completions
	}
	m := map[string]any{"name": name, "template": map[string]any{"spec": spec}}
	if replicas >= 0 {
		m["replicas"] = replicas
	}
	return m
}

// TestJobSetSize: a JobSet's gang is replicas x pods per Job over its replicatedJobs, with
// Kubernetes' defaults (1) and completions capping parallelism.
func TestJobSetSize(t *testing.T) {
	for _, c := range []struct {
		js   *unstructured.Unstructured
		want int
	}{
		{jobSet("a", rj("ps", 1, 1, 1), rj("workers", 1, 4, 4)), 5},
		{jobSet("b", rj("ps", -1, -1, -1), rj("workers", 3, 2, -1)), 7}, // defaults: replicas 1, parallelism 1
		{jobSet("c", rj("ps", 1, 1, 1), rj("workers", 2, 4, 2)), 5},     // completions 2 < parallelism 4
		{jobSet("d"), 0},
	} {
		got, err := gang.JobSetSize(c.js)
		if err != nil || got != c.want {
			t.Errorf("JobSet %s: size %d, %v; want %d", c.js.GetName(), got, err, c.want)
		}
	}
	bad := jobSet("e", map[string]any{"name": "w", "replicas": "two"})
	if _, err := gang.JobSetSize(bad); err == nil {
		t.Error("JobSet with replicas \"two\": no error")
	}
}

// TestKeyOfForms: each form's pod label names its gang; a TrainJob's pods (a scheduler-plugins
// PodGroup label and a JobSet's) are the PodGroup's gang; spec.schedulingGroup and the job label
// come first as before.
func TestKeyOfForms(t *testing.T) {
	pg := "up"
	for _, c := range []struct {
		labels map[string]string
		group  *string
		want   gang.Key
	}{
		{map[string]string{gang.JobSetLabel: "js"}, nil, gang.Key{Namespace: "train", Name: "js", Form: gang.FormJobSet}},
		{map[string]string{gang.CoschedulingLabel: "pg"}, nil, gang.Key{Namespace: "train", Name: "pg", Form: gang.FormCoscheduling}},
		{map[string]string{gang.CoschedulingLabel: "tj", gang.JobSetLabel: "tj-js"}, nil, gang.Key{Namespace: "train", Name: "tj", Form: gang.FormCoscheduling}},
		{map[string]string{gang.JobLabel: "l", gang.JobSetLabel: "js"}, nil, gang.Key{Namespace: "train", Name: "l", ByLabel: true}},
		{map[string]string{gang.CoschedulingLabel: "pg"}, &pg, gang.Key{Namespace: "train", Name: "up"}},
	} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: "p", Labels: c.labels}}
		if c.group != nil {
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: c.group}
		}
		k, ok := gang.KeyOf(p)
		if !ok || k != c.want {
			t.Errorf("labels %v: key %+v %v, want %+v", c.labels, k, ok, c.want)
		}
	}
	js := gang.Key{Namespace: "train", Name: "js", Form: gang.FormJobSet}
	if s := js.String(); s != "train/jobset.sigs.k8s.io/jobset-name=js" || js.Kind() != "JobSet" {
		t.Errorf("JobSet key: %q %q", s, js.Kind())
	}
}

// formGroups are PodGroups reading the given objects, with the custom resources served as said.
func formGroups(t *testing.T, served []schema.GroupVersionResource, objs ...runtime.Object) gang.PodGroups {
	t.Helper()
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	for _, r := range served {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: r.GroupVersion().String(),
			APIResources: []metav1.APIResource{{Name: r.Resource, Namespaced: true}}})
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gang.CoschedulingResource: "PodGroupList", gang.JobSetResource: "JobSetList"}, objs...)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	g, err := gang.PodGroups{}.WithCustom(disc, f)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	for r, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", r)
		}
	}
	return g
}

// TestCustomMinCount: a gang's size comes from its scheduler-plugins PodGroup's minMember or its
// JobSet's replicatedJobs; an object not created yet is ErrIncomplete; a form whose resource is
// not served is an error that says so. Collect then holds the gang to that size.
func TestCustomMinCount(t *testing.T) {
	both := []schema.GroupVersionResource{gang.CoschedulingResource, gang.JobSetResource}
	g := formGroups(t, both,
		obj(gang.CoschedulingResource, "PodGroup", "pg", map[string]any{"minMember": int64(3)}),
		jobSet("js", rj("ps", 1, 1, 1), rj("workers", 2, 2, 2)))
	for _, f := range []gang.Form{gang.FormCoscheduling, gang.FormJobSet} {
		if _, ok := g.Served(f); !ok {
			t.Errorf("%s not served", f)
		}
	}
	for _, c := range []struct {
		key  gang.Key
		want int
	}{
		{gang.Key{Namespace: "train", Name: "pg", Form: gang.FormCoscheduling}, 3},
		{gang.Key{Namespace: "train", Name: "js", Form: gang.FormJobSet}, 5},
	} {
		n, err := g.MinCount(c.key)
		if err != nil || n != c.want {
			t.Errorf("%s: min count %d, %v; want %d", c.key, n, err, c.want)
		}
	}
	if _, err := g.MinCount(gang.Key{Namespace: "train", Name: "later", Form: gang.FormJobSet}); !errors.Is(err, gang.ErrIncomplete) {
		t.Errorf("a JobSet not created yet: %v, want ErrIncomplete", err)
	}
	only := formGroups(t, both[:1])
	if _, err := only.MinCount(gang.Key{Namespace: "train", Name: "js", Form: gang.FormJobSet}); err == nil || errors.Is(err, gang.ErrIncomplete) ||
		!strings.Contains(err.Error(), "jobsets.jobset.x-k8s.io") {
		t.Errorf("JobSets not served: %v, want an error naming them", err)
	}

	// A JobSet of a PS and two Jobs of two 1-GPU workers: all five pods or none.
	pods := gangPods("js", 4, 1, nil)
	for _, p := range pods {
		delete(p.Labels, gang.JobLabel)
		delete(p.Annotations, gang.MinCountAnnotation)
		p.Labels[gang.JobSetLabel] = "js"
	}
	key, _ := gang.KeyOf(pods[0])
	n, err := g.MinCount(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gang.Collect(key, pods[:4], n); !errors.Is(err, gang.ErrIncomplete) {
		t.Errorf("4 of the JobSet's 5 pods: %v, want ErrIncomplete", err)
	}
	if gg, err := gang.Collect(key, pods, n); err != nil || gg.PS != pods[0] || len(gg.Workers) != 4 {
		t.Errorf("the JobSet's 5 pods: %v", err)
	}
	delete(pods[0].Labels, gang.RoleLabel) // the PS's replicatedJob without the role label
	if _, err := gang.Collect(key, pods, n); err == nil || !strings.Contains(err.Error(), gang.RoleLabel+"="+gang.RolePS) {
		t.Errorf("a JobSet without a PS: %v, want the hint to label its replicatedJob", err)
	}
}
