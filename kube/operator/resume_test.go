package operator_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
)

// TestResumeAfterRestart: the operator and the API server stop while a gang runs; meanwhile one
// of its workers fails, a second gang is planned, and a third gang's install is caught half done
// (its pods hold the finalizer and the wiring of switch job 9, nothing is on the switches, no
// Ready: an operator that died between recording the job and adding it). The operator started
// on the restarted API server removes the first gang's job and deletes its pods, completes the
// third's install with the job id its pods record, and installs the second with a free id.
func TestResumeAfterRestart(t *testing.T) {
	e := newEnv(t)
	o := e.start(t)
	plA := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	podsA := e.waitReady(t, "a", plA)
	idA, _ := e.checkWiring(t, podsA, plA)
	kubetest.Fatal(t, o.Stop())
	e.api.Restart(t)

	e.setPhase(t, podsA[1], v1.PodFailed)
	plB := e.submit(t, kubetest.Job{Name: "b", Workers: 1, GPUsPerWorker: 2, Model: "resnet50"})
	plC := e.submit(t, kubetest.Job{Name: "c", Workers: 2, GPUsPerWorker: 2, Model: "bert-base", PodGroup: true})
	for _, p := range e.pods(t, "c") {
		p.Finalizers = append(p.Finalizers, gang.Finalizer)
		p.Annotations[operator.InstalledAnnotation] = plC.ID
		p.Annotations[gang.SwitchJobAnnotation] = "9"
		p.Annotations[gang.SlotBaseAnnotation] = "32"
		p.Annotations[gang.WindowAnnotation] = "16"
		_, err := e.cs().CoreV1().Pods("default").Update(e.ctx, p, metav1.UpdateOptions{})
		kubetest.Fatal(t, err)
	}
	time.Sleep(500 * time.Millisecond) // nothing acts while no operator runs
	if ids := e.switchJobs(t); !slices.Equal(ids, []int{idA}) {
		t.Fatalf("with no operator running the controller's jobs changed: %v", ids)
	}

	e.start(t)
	e.waitFor(t, "a's job removed and its pods deleted", func() (bool, string) {
		ids := e.switchJobs(t)
		if slices.Contains(ids, idA) {
			return false, fmt.Sprintf("controller jobs %v", ids)
		}
		for _, p := range e.pods(t, "a") {
			if slices.Contains(p.Finalizers, gang.Finalizer) || (p.DeletionTimestamp == nil && p.Status.Phase != v1.PodFailed) {
				return false, fmt.Sprintf("pod %s: finalizers %v, deleting %v", p.Name, p.Finalizers, p.DeletionTimestamp != nil)
			}
		}
		return true, ""
	})
	podsC := e.waitReady(t, "c", plC)
	if idC, baseC := e.checkWiring(t, podsC, plC); idC != 9 || baseC != 32 {
		t.Errorf("gang c finished with switch job %d, slots %d; its pods recorded 9 and 32", idC, baseC)
	}
	podsB := e.waitReady(t, "b", plB)
	idB, _ := e.checkWiring(t, podsB, plB)
	if idB == 9 {
		t.Errorf("gang b got switch job 9, which gang c's pods hold")
	}
	t.Logf("after the restart: a removed, c completed as job 9, b installed as job %d", idB)
	e.expectEvents(t, podsA[2].Name, "INARemoved")
}

// TestPodDeletedMidJob: a worker pod deleted while its gang runs keeps its finalizer until the
// job is off the switches; then the rest of the gang is deleted and every pod let go, and the
// switch controller and switches hold nothing of it.
func TestPodDeletedMidJob(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 3, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	pods := e.waitReady(t, "a", pl)
	id, _ := e.checkWiring(t, pods, pl)
	for _, p := range pods {
		e.setPhase(t, p, v1.PodRunning)
	}
	victim := pods[len(pods)-1]
	kubetest.Fatal(t, e.cs().CoreV1().Pods("default").Delete(e.ctx, victim.Name, metav1.DeleteOptions{}))
	e.waitFor(t, "the job removed and the gang deleted", func() (bool, string) {
		if ids := e.switchJobs(t); len(ids) > 0 || len(e.onSwitches(id)) > 0 {
			return false, fmt.Sprintf("controller jobs %v, PS entries on %v", ids, e.onSwitches(id))
		}
		for _, p := range e.pods(t, "a") {
			if slices.Contains(p.Finalizers, gang.Finalizer) || p.DeletionTimestamp == nil {
				return false, fmt.Sprintf("pod %s: finalizers %v, deleting %v", p.Name, p.Finalizers, p.DeletionTimestamp != nil)
			}
		}
		return true, ""
	})
	e.expectEvents(t, pods[0].Name, "INAInstalled", "INARemoved")
	t.Logf("switch job %d removed after pod %s was deleted", id, victim.Name)
}

// TestReplannedGangMovesItsJob: a gang whose plan is given up after the install (the plugin
// planned it anew before binding) has the old job removed and its pods' wiring cleared before the
// new plan is installed, under the next id (not the one just freed: ids go round).
func TestReplannedGangMovesItsJob(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	j := kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
	pl := e.submit(t, j)
	var old []*v1.Pod
	e.waitFor(t, "the first plan Ready", func() (bool, string) {
		old = e.pods(t, "a")
		for _, p := range old {
			if p.Annotations[gang.ReadyAnnotation] != pl.ID {
				return false, "not yet"
			}
		}
		return true, ""
	})
	oldID := atoi(t, old[0].Annotations[gang.SwitchJobAnnotation])
	// The plugin's second try: a new plan id on the same placement.
	again := *pl
	again.ID = pl.ID + "-2"
	for _, p := range old {
		kubetest.Fatal(t, gang.Annotate(e.ctx, e.cs(), p, again.Annotations(p)))
	}
	pods := e.waitReady(t, "a", &again)
	id, _ := e.checkWiring(t, pods, &again)
	if ids := e.switchJobs(t); !slices.Equal(ids, []int{id}) || id != oldID+1 {
		t.Errorf("controller jobs %v after the re-plan; want only the new plan's, id %d (ids go round: not the %d just freed)", ids, oldID+1, oldID)
	}
	e.expectEvents(t, pods[0].Name, "INARemoved")
}
