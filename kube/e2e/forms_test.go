package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// formCRDs are the custom resources of formsWave's gangs, installed before the scheduler starts
// (it serves the gang forms whose resources it finds then).
var formCRDs = []kubetest.CRD{kubetest.CoschedulingCRD, kubetest.JobSetCRD}

// formsWave is a wave of gangs as users submit them: j7 a JobSet (a PS replicatedJob and one
// Indexed Job of four 1-GPU workers; its pods made as the Job controller makes them, no JobSet
// controller runs: kubetest/forms.go) and j8 a scheduler-plugins PodGroup of minMember 3 (as
// Kubeflow Trainer's TrainJob and the Training Operator's PyTorchJob make).
func formsWave() []gangJob {
	mk := func(name string, workers, gpus int, model string, form gang.Form, iters, values int) gangJob {
		return gangJob{Job: kubetest.Job{Namespace: "default", Name: name, Workers: workers, GPUsPerWorker: gpus, Model: model,
			Form: form, SchedulerName: "inapack-scheduler"}, iters: iters, values: values, compute: 5 * time.Millisecond}
	}
	return []gangJob{mk("j7", 4, 1, "resnet50", gang.FormJobSet, 40, 8192), mk("j8", 2, 2, "vgg16", gang.FormCoscheduling, 40, 16384)}
}

// gangName is a gang's name in the demo's table with what the user submitted: JobSet, PodGroup
// (scheduling.k8s.io's or scheduler-plugins'), or label.
func gangName(j kubetest.Job) string {
	k := gang.Key{Name: j.Name, ByLabel: !j.PodGroup && j.Form == gang.FormPodGroup, Form: j.Form}
	return j.Name + " " + k.Kind()
}

// endForms deletes the wave's JobSets and PodGroups once their jobs ended (their users' part) and
// waits until they are gone: nothing of a gang is left.
func endForms(ctx context.Context, t *testing.T, kapi *kubetest.API, wave []gangJob) {
	t.Helper()
	for _, g := range wave {
		if g.Form == gang.FormPodGroup {
			continue
		}
		kubetest.Fatal(t, kubetest.DeleteForm(ctx, kapi.Client, g.Job))
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(kubetest.GetForm(ctx, kapi.Client, g.Job)), nil
		})
		if err != nil {
			t.Errorf("%s %s left after its job ended: %v", gangName(g.Job), g.Name, err)
		}
	}
}
