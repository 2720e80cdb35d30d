package deploy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// userForms are the samples of what users submit, besides deploy/sample's PodGroup.
var userForms = []string{"../../deploy/jobset", "../../deploy/trainjob", "../../deploy/pytorchjob"}

// TestUserFormSamples: deploy/jobset, deploy/trainjob and deploy/pytorchjob are accepted by a real
// API server with their projects' own CRDs (server-side dry run), and each makes, as its
// controllers make its pods (JobSet's, Trainer's coscheduling plugin's, the Training Operator's
// gang scheduling: their rules as their docs give them), one gang NetPack plans: its pods name it
// with the form's label, all with the inapack-scheduler, of the size the gang's object gives, one
// PS, workers with GPUs, each variable from an annotation of the contract.
func TestUserFormSamples(t *testing.T) {
	ctx := context.Background()
	api := kubetest.StartAPI(t)
	kubetest.InstallCRDs(t, api, append([]kubetest.CRD{kubetest.CoschedulingCRD, kubetest.JobSetCRD, kubetest.PyTorchJobCRD}, kubetest.TrainerCRDs...)...)
	dyn, err := dynamic.NewForConfig(api.Config)
	kubetest.Fatal(t, err)
	a := dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(api.Client.Discovery()))}
	for _, dir := range userForms {
		objs := render(t, dir)
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				_, err := api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
		}
		for _, o := range objs {
			if err := a.apply(ctx, o); err != nil {
				t.Errorf("%s: rejected: %v", dir, err)
			}
		}
		var key gang.Key
		var size int
		var pods []*v1.Pod
		switch {
		case find(objs, "JobSet", "") != nil:
			key, size, pods = jobSetPods(t, find(objs, "JobSet", ""))
		case find(objs, "TrainJob", "") != nil:
			key, size, pods = trainJobPods(t, find(objs, "TrainJob", ""), find(objs, "TrainingRuntime", ""))
		case find(objs, "PyTorchJob", "") != nil:
			key, size, pods = pyTorchJobPods(t, find(objs, "PyTorchJob", ""))
			for _, o := range objs { // the PS, beside the job
				if o.GetKind() == "Pod" {
					var p v1.Pod
					kubetest.Fatal(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p))
					pods = append(pods, &p)
				}
			}
		default:
			t.Fatalf("%s: no JobSet, TrainJob or PyTorchJob", dir)
		}
		checkGang(t, dir, key, size, pods)
	}
	// The check can fail: the API server rejects a JobSet without replicatedJobs' templates.
	bad := find(render(t, userForms[0]), "JobSet", "").DeepCopy()
	unstructured.RemoveNestedField(bad.Object, "spec", "replicatedJobs")
	kubetest.Fatal(t, unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"name": "w", "replicas": int64(-1)}}, "spec", "replicatedJobs"))
	if err := a.apply(ctx, bad); err == nil {
		t.Error("a JobSet with a replicatedJob of replicas -1 and no template was accepted")
	}
}

// podsOf are n pods of a pod template (an unstructured PodTemplateSpec at path of o), named
// prefix-i, with labels added.
func podsOf(t *testing.T, o map[string]any, n int64, prefix, ns string, labels map[string]string, path ...string) []*v1.Pod {
	t.Helper()
	m, found, err := unstructured.NestedMap(o, path...)
	if err != nil || !found {
		t.Fatalf("%s: no pod template at %v: %v", prefix, path, err)
	}
	var tmpl v1.PodTemplateSpec
	kubetest.Fatal(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl))
	var out []*v1.Pod
	for i := range n {
		p := &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		p.Name, p.Namespace = fmt.Sprintf("%s-%d", prefix, i), ns
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for k, v := range labels {
			p.Labels[k] = v
		}
		out = append(out, p)
	}
	return out
}

// num is the number at path (YAML decodes to float64 or int64), def if absent.
func num(m map[string]any, def int64, path ...string) int64 {
	v, found, _ := unstructured.NestedFieldNoCopy(m, path...)
	if !found {
		return def
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return def
}

// jobSetPods: the JobSet controller makes replicas Jobs per replicatedJob, the Job controller
// parallelism pods per Job, each labelled with the JobSet's and the replicatedJob's names.
func jobSetPods(t *testing.T, js *unstructured.Unstructured) (gang.Key, int, []*v1.Pod) {
	t.Helper()
	size, err := gang.JobSetSize(js)
	kubetest.Fatal(t, err)
	rjs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	var pods []*v1.Pod
	for _, o := range rjs {
		rj := o.(map[string]any)
		name := rj["name"].(string)
		for r := range num(rj, 1, "replicas") {
			pods = append(pods, podsOf(t, rj, num(rj, 1, "template", "spec", "parallelism"), fmt.Sprintf("%s-%s-%d", js.GetName(), name, r),
				js.GetNamespace(), map[string]string{gang.JobSetLabel: js.GetName(), gang.ReplicatedJobLabel: name}, "template", "spec", "template")...)
		}
	}
	return gang.Key{Namespace: js.GetNamespace(), Name: js.GetName(), Form: gang.FormJobSet}, size, pods
}

// trainJobPods: Trainer renders the TrainJob to a JobSet from its runtime's template, the torch
// replicatedJob "node" of numNodes pods with resourcesPerNode on its container "node", and for
// podGroupPolicy.coscheduling a PodGroup of every pod, whose name (the TrainJob's) labels them.
func trainJobPods(t *testing.T, tj, rt *unstructured.Unstructured) (gang.Key, int, []*v1.Pod) {
	t.Helper()
	if rt == nil {
		t.Fatal("no TrainingRuntime beside the TrainJob")
	}
	if _, ok, _ := unstructured.NestedMap(rt.Object, "spec", "podGroupPolicy", "coscheduling"); !ok {
		t.Errorf("runtime %s: no podGroupPolicy.coscheduling: Trainer would make no PodGroup, the pods no gang", rt.GetName())
	}
	if ref, _, _ := unstructured.NestedString(tj.Object, "spec", "runtimeRef", "name"); ref != rt.GetName() {
		t.Errorf("TrainJob %s names runtime %q, not %s", tj.GetName(), ref, rt.GetName())
	}
	nodes := num(tj.Object, num(rt.Object, 1, "spec", "mlPolicy", "numNodes"), "spec", "trainer", "numNodes")
	limits, _, _ := unstructured.NestedMap(tj.Object, "spec", "trainer", "resourcesPerNode", "limits")
	rjs, _, _ := unstructured.NestedSlice(rt.Object, "spec", "template", "spec", "replicatedJobs")
	labels := map[string]string{gang.CoschedulingLabel: tj.GetName(), gang.JobSetLabel: tj.GetName()}
	var pods []*v1.Pod
	for _, o := range rjs {
		rj := o.(map[string]any)
		name := rj["name"].(string)
		n := num(rj, 1, "template", "spec", "parallelism")
		if name == "node" {
			n = nodes
		}
		labels[gang.ReplicatedJobLabel] = name
		ps := podsOf(t, rj, n, tj.GetName()+"-"+name+"-0", tj.GetNamespace(), labels, "template", "spec", "template")
		for _, p := range ps {
			for i, c := range p.Spec.Containers {
				if name != "node" || c.Name != "node" {
					continue
				}
				p.Spec.Containers[i].Resources.Limits = v1.ResourceList{}
				for r, q := range limits {
					p.Spec.Containers[i].Resources.Limits[v1.ResourceName(r)] = resource.MustParse(fmt.Sprint(q))
				}
			}
		}
		pods = append(pods, ps...)
	}
	return gang.Key{Namespace: tj.GetNamespace(), Name: tj.GetName(), Form: gang.FormCoscheduling}, len(pods), pods
}

// pyTorchJobPods: the Training Operator with gang scheduling makes a PodGroup named after the
// job, of minMember runPolicy.schedulingPolicy.minAvailable (else every replica), labels each
// replica's pods with it and sets their scheduler where the template names none. (The sample's
// PS is a Pod beside the job, in its gang.)
func pyTorchJobPods(t *testing.T, job *unstructured.Unstructured) (gang.Key, int, []*v1.Pod) {
	t.Helper()
	specs, _, _ := unstructured.NestedMap(job.Object, "spec", "pytorchReplicaSpecs")
	var pods []*v1.Pod
	total := int64(0)
	for _, typ := range slices.Sorted(func(yield func(string) bool) {
		for k := range specs {
			if !yield(k) {
				return
			}
		}
	}) {
		spec := specs[typ].(map[string]any)
		n := num(spec, 1, "replicas")
		total += n
		pods = append(pods, podsOf(t, spec, n, job.GetName()+"-"+strings.ToLower(typ), job.GetNamespace(),
			map[string]string{gang.CoschedulingLabel: job.GetName(), "training.kubeflow.org/replica-type": strings.ToLower(typ)}, "template")...)
	}
	size := num(job.Object, total, "spec", "runPolicy", "schedulingPolicy", "minAvailable")
	return gang.Key{Namespace: job.GetNamespace(), Name: job.GetName(), Form: gang.FormCoscheduling}, int(size), pods
}

// checkGang: the pods are one gang of key NetPack plans with the inapack-scheduler, and each
// worker takes INAPack's variables from the contract's annotations (directly, or as INAPACK_RANK
// and INAPACK_WORLD_SIZE handed on in its command where a job operator sets RANK and WORLD_SIZE).
func checkGang(t *testing.T, dir string, key gang.Key, size int, pods []*v1.Pod) {
	t.Helper()
	workers := 0
	for _, p := range pods {
		if k, ok := gang.KeyOf(p); !ok || k != key || p.Spec.SchedulerName != "inapack-scheduler" {
			t.Errorf("%s: pod %s: gang %v, scheduler %q: want %v and inapack-scheduler", dir, p.Name, k, p.Spec.SchedulerName, key)
		}
		if p.Labels[gang.RoleLabel] == gang.RolePS {
			continue
		}
		workers++
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				env[e.Name] = strings.TrimSuffix(strings.TrimPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.annotations['"), "']")
			}
		}
		want := map[string]string{"RANK": gang.RankAnnotation, "WORLD_SIZE": gang.WorldSizeAnnotation, "INAPACK_JOB": gang.SwitchJobAnnotation,
			"INAPACK_SLOT_BASE": gang.SlotBaseAnnotation, "INAPACK_WINDOW": gang.WindowAnnotation, "INAPACK_PRIORITY": gang.PriorityCapAnnotation,
			"INAPACK_PS_IP": gang.PSIPAnnotation, "INAPACK_PS_MAC": gang.PSMACAnnotation, "INAPACK_IP": gang.IPAnnotation, "INAPACK_IFACE": gang.IfaceAnnotation,
			"INAPACK_MEMBER": gang.MemberAnnotation}
		cmd := strings.Join(append(slices.Clone(p.Spec.Containers[0].Command), p.Spec.Containers[0].Args...), " ")
		for k, a := range want {
			if env[k] == a {
				continue
			}
			if (k == "RANK" || k == "WORLD_SIZE") && env["INAPACK_"+k] == a && strings.Contains(cmd, k+"=$(INAPACK_"+k+")") {
				continue
			}
			t.Errorf("%s: worker %s: %s from %q, want annotation %s", dir, p.Name, k, env[k], a)
		}
	}
	g, err := gang.Collect(key, pods, size)
	if err != nil || workers == 0 {
		t.Errorf("%s: not a gang NetPack can plan (%d pods, size %d, %d workers): %v", dir, len(pods), size, workers, err)
		return
	}
	t.Logf("%s: gang %s of %d pods: PS %s, %d workers of %d GPUs", dir, key, size, g.PS.Name, len(g.Workers), g.GPUs())
}
