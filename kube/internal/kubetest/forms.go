package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/inapack/inapack/kube/gang"
)

// A Job of a custom Form is submitted as its user does (FormObject: a JobSet, or a
// scheduler-plugins PodGroup) with its pods as the controllers make them. No JobSet controller
// runs: the control plane here has no kube-controller-manager, so the Jobs a JobSet controller
// would create would never get pods; the pods are made as the Job controller makes an Indexed
// Job's for the JobSet's Jobs (named <jobset>-<replicatedJob>-<job index>-<completion index>,
// without the random suffix, and labelled as JobSet and the Job controller label them).

// JobSetPSJob and JobSetWorkersJob are the sample JobSet's replicatedJobs: the PS (one pod,
// labelled inapack.io/role=ps through its template) and the workers (one Indexed Job of
// parallelism Workers).
const (
	JobSetPSJob      = "ps"
	JobSetWorkersJob = "workers"
)

// FormObject is j's object of its form, as a user submits it; nil for the other forms.
func (j Job) FormObject() *unstructured.Unstructured {
	min := j.MinCount
	if min == 0 {
		min = j.Workers + 1
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(j.Namespace)
	u.SetName(j.Name)
	switch j.Form {
	case gang.FormCoscheduling:
		u.SetAPIVersion(gang.CoschedulingResource.GroupVersion().String())
		u.SetKind("PodGroup")
		u.Object["spec"] = map[string]any{"minMember": int64(min)}
	case gang.FormJobSet:
		_, pods := j.Objects()
		rj := func(name string, pod *v1.Pod, n int64) map[string]any {
			spec := pod.Spec.DeepCopy()
			spec.SchedulingGroup = nil
			tmpl := map[string]any{"metadata": map[string]any{"labels": map[string]any{gang.RoleLabel: pod.Labels[gang.RoleLabel]},
				"annotations": map[string]any{gang.ModelAnnotation: j.Model}}, "spec": toMap(spec)}
			return map[string]any{"name": name, "replicas": int64(1), "template": map[string]any{"spec": map[string]any{
				"parallelism": n, "completions": n, "completionMode": "Indexed", "backoffLimit": int64(0), "template": tmpl}}}
		}
		u.SetAPIVersion(gang.JobSetResource.GroupVersion().String())
		u.SetKind("JobSet")
		// The PS serves until stopped: the JobSet succeeds with its workers (deploy/jobset).
		u.Object["spec"] = map[string]any{"replicatedJobs": []any{rj(JobSetPSJob, pods[0], 1), rj(JobSetWorkersJob, pods[1], int64(j.Workers))},
			"successPolicy": map[string]any{"operator": "All", "targetReplicatedJobs": []any{JobSetWorkersJob}}}
	default:
		return nil
	}
	return u
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// formPod links a pod of Objects to j's gang as its form's controllers do.
func (j Job) formPod(p *v1.Pod, ps bool) {
	switch j.Form {
	case gang.FormCoscheduling:
		p.Labels[gang.CoschedulingLabel] = j.Name
	case gang.FormJobSet:
		rjob, index := JobSetPSJob, "0"
		if !ps {
			rjob, index = JobSetWorkersJob, strings.TrimPrefix(p.Name, j.Name+"-worker-")
		}
		job := j.Name + "-" + rjob + "-0"
		p.Name = job + "-" + index
		for k, v := range map[string]string{gang.JobSetLabel: j.Name, gang.ReplicatedJobLabel: rjob,
			"jobset.sigs.k8s.io/replicatedjob-replicas": "1", "jobset.sigs.k8s.io/job-index": "0",
			"batch.kubernetes.io/job-name": job, "job-name": job, "batch.kubernetes.io/job-completion-index": index} {
			p.Labels[k] = v
		}
		p.Annotations["batch.kubernetes.io/job-completion-index"] = index
		p.Spec.Hostname, p.Spec.Subdomain = p.Name, j.Name // JobSet's headless Service names each pod
	}
}

// SubmitForm creates j's form object (nothing for the other forms).
func SubmitForm(ctx context.Context, cs kubernetes.Interface, j Job) error {
	u := j.FormObject()
	if u == nil {
		return nil
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	err = cs.Discovery().RESTClient().Post().AbsPath(formPath(j)).SetHeader("Content-Type", "application/json").Body(b).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), j.Name, err)
	}
	return nil
}

// DeleteForm deletes j's form object (its user's part once the job ended; nothing for the other
// forms).
func DeleteForm(ctx context.Context, cs kubernetes.Interface, j Job) error {
	if j.FormObject() == nil {
		return nil
	}
	return cs.Discovery().RESTClient().Delete().AbsPath(formPath(j) + "/" + j.Name).Do(ctx).Error()
}

func formPath(j Job) string {
	r := gang.CoschedulingResource
	if j.Form == gang.FormJobSet {
		r = gang.JobSetResource
	}
	return "/apis/" + r.Group + "/" + r.Version + "/namespaces/" + j.Namespace + "/" + r.Resource
}

// GetForm reads j's form object (an error for the other forms: IsNotFound once deleted).
func GetForm(ctx context.Context, cs kubernetes.Interface, j Job) error {
	return cs.Discovery().RESTClient().Get().AbsPath(formPath(j) + "/" + j.Name).Do(ctx).Error()
}
