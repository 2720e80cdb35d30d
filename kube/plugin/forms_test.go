package plugin_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
)

// TestJobSetAndPodGroupGangs: with the CRDs of JobSet and scheduler-plugins' PodGroup installed
// (their projects' own), a JobSet's pods (as its Jobs' pods are made: kubetest/forms.go) form
// one gang of the JobSet's size, and a scheduler-plugins PodGroup's pods one of its minMember:
// each is held until all its pods exist (the PodGroup's pods also until the PodGroup exists),
// then placed whole by NetPack where the scheduler service places it, and the operator installs
// its switch job before any pod binds; when the workers succeed the job leaves the switches. A
// JobSet with more pods than it runs is refused, saying so.
func TestJobSetAndPodGroupGangs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	kubetest.InstallCRDs(t, api, kubetest.CoschedulingCRD, kubetest.JobSetCRD) // before the scheduler: it asks which are served
	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	sc := kubetest.StartSwitchController(ctx, t, topo, "forms-token")
	raw, err := os.ReadFile(twoRacks)
	kubetest.Fatal(t, err)
	cs := api.Client
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "topology"},
		Data: map[string]string{"topology.json": string(raw)}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, cs, nodes))
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(api, operatorProfile, ""), app.WithPlugin(plugin.Name, plugin.New))
	op, err := operator.Start(ctx, api.Config, operator.Config{Controller: sc.Client,
		Topology: types.NamespacedName{Namespace: "default", Name: "topology"}, SyncInterval: time.Second, MaxRetryDelay: time.Second})
	kubetest.Fatal(t, err)
	t.Cleanup(func() { _ = op.Stop() })
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)

	js := kubetest.Job{Namespace: "default", Name: "js", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", Form: gang.FormJobSet,
		SchedulerName: "inapack-scheduler"}
	pg := kubetest.Job{Namespace: "default", Name: "pg", Workers: 2, GPUsPerWorker: 2, Model: "bert-base", Form: gang.FormCoscheduling,
		SchedulerName: "inapack-scheduler"}

	// The JobSet and all its pods but the last: none may bind.
	kubetest.Fatal(t, kubetest.SubmitForm(ctx, cs, js))
	_, pods := js.Objects()
	for _, p := range pods[:len(pods)-1] {
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	time.Sleep(2 * time.Second)
	noneBound(ctx, t, api, js)
	_, err = cs.CoreV1().Pods("default").Create(ctx, pods[len(pods)-1], metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	installed(ctx, t, api, sc, svc, js)

	// The PodGroup's pods before the PodGroup: held until it exists.
	_, pods = pg.Objects()
	for _, p := range pods {
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	time.Sleep(2 * time.Second)
	noneBound(ctx, t, api, pg)
	kubetest.Fatal(t, kubetest.SubmitForm(ctx, cs, pg))
	installed(ctx, t, api, sc, svc, pg)

	// A JobSet of a PS and two workers with a third worker pod (a pod its controller did not make).
	big := kubetest.Job{Namespace: "default", Name: "big", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", Form: gang.FormJobSet,
		SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, cs, big))
	extra := big
	extra.Workers = 3
	_, pods = extra.Objects()
	_, err = cs.CoreV1().Pods("default").Create(ctx, pods[3], metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	why, err := kubetest.WaitPending(ctx, cs, extra, "JobSet size (replicas x parallelism) 3", 20*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("refused: %s", why)
	kubetest.NoneBound(ctx, t, cs, extra)

	// The workers of both gangs succeed (the kubelet's part): their switch jobs are removed.
	for _, j := range []kubetest.Job{js, pg} {
		_, pods := j.Objects()
		for _, p := range pods[1:] {
			kubetest.Fatal(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Status.Phase = v1.PodSucceeded
				_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
				return err
			}))
		}
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		jobs, err := sc.Client.Jobs(ctx)
		if err != nil || len(jobs) > 0 {
			last = fmt.Sprintf("controller jobs %v (%v)", jobs, err)
			return false, nil
		}
		for _, j := range []kubetest.Job{js, pg} {
			_, pods := j.Objects()
			for _, p := range pods {
				cur, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil || slices.Contains(cur.Finalizers, gang.Finalizer) {
					last = fmt.Sprintf("pod %s keeps the finalizer (%v)", p.Name, err)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the gangs' switch jobs not removed: %v; last: %s", err, last)
	}
}

// installed waits for j bound whole, on the scheduler service's nodes, and checks the operator
// installed its switch job (the controller holds it, the switches its PS entry) for the plan
// every pod carries.
func installed(ctx context.Context, t *testing.T, api *kubetest.API, sc *kubetest.SwitchController, svc *kubetest.Service, j kubetest.Job) {
	t.Helper()
	bound, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	gotW, gotPS := kubetest.Placed(j, bound)
	wantW, wantPS, err := svc.Place(j)
	kubetest.Fatal(t, err)
	if !slices.Equal(gotW, wantW) || gotPS != wantPS {
		t.Errorf("%s %s placed on workers %v ps %s; the scheduler service places it on %v ps %s", j.Form, j.Name, gotW, gotPS, wantW, wantPS)
	}
	_, pods := j.Objects()
	plans, switchJobs := map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		cur, err := api.Client.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		plans[cur.Annotations[gang.PlanAnnotation]] = true
		switchJobs[cur.Annotations[gang.SwitchJobAnnotation]] = true
		if cur.Annotations[gang.ReadyAnnotation] != cur.Annotations[gang.PlanAnnotation] {
			t.Errorf("pod %s bound with ready %q, plan %q", p.Name, cur.Annotations[gang.ReadyAnnotation], cur.Annotations[gang.PlanAnnotation])
		}
	}
	if len(plans) != 1 || len(switchJobs) != 1 {
		t.Fatalf("%s %s: plans %v, switch jobs %v: want one each", j.Form, j.Name, plans, switchJobs)
	}
	var id int
	for s := range switchJobs {
		id, _ = strconv.Atoi(s)
	}
	jobs, err := sc.Client.Jobs(ctx)
	kubetest.Fatal(t, err)
	if !slices.ContainsFunc(jobs, func(c cp.JobConfig) bool { return c.ID == id && c.Owner == operator.Name }) {
		t.Errorf("%s %s: switch job %d not on the controller (%d jobs)", j.Form, j.Name, id, len(jobs))
	}
	var on []string
	for name, sw := range sc.Switches {
		if _, ok := sw.PS(uint16(id)); ok {
			on = append(on, name)
		}
	}
	if len(on) == 0 {
		t.Errorf("%s %s: no switch holds switch job %d's PS entry", j.Form, j.Name, id)
	}
	t.Logf("%s %s: workers %v ps %s, switch job %d on %v", j.Form, j.Name, gotW, gotPS, id, on)
}

// noneBound fails t if a pod of j that exists is bound.
func noneBound(ctx context.Context, t *testing.T, api *kubetest.API, j kubetest.Job) {
	t.Helper()
	_, pods := j.Objects()
	for _, p := range pods {
		cur, err := api.Client.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil && cur.Spec.NodeName != "" {
			t.Errorf("pod %s of the incomplete gang %s is bound to %s", p.Name, j.Name, cur.Spec.NodeName)
		}
	}
}
