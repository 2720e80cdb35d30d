package plugin_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/plugin"
)

// waitGroupCondition waits until gang name's PodGroup carries condition typ with status and
// reason, its message containing want, and an event on the PodGroup with reason event.
func waitGroupCondition(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, typ string, status metav1.ConditionStatus, reason, want, event string) {
	t.Helper()
	got, err := kubetest.WaitGroupCondition(ctx, cs, "default", name, typ, status, reason, want, event, 20*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("PodGroup %s: %s=%s; event %s", name, typ, got, event)
}

// TestPodGroupConditionsAndMetrics: each gang's state is on its PodGroup (condition
// inapack.io/Planned and an event) and in the scheduler's /metrics: a refused gang (unknown
// model) is Planned=False GangRefused and waits as GangRefused; a gang too large for the cluster
// is Planned=False NoFit and waits as NoFit; a gang missing pods waits as Incomplete; a gang that
// fits is Planned=True with its plan, counted planned and bound, its plan timed, and waits no more.
func TestPodGroupConditionsAndMetrics(t *testing.T) {
	ctx, api, _ := start(t)
	// The gauge is the process's: gangs of tests before this one (their API servers gone) leave.
	plugin.ForgetWaitingGangs()
	srv := httptest.NewServer(legacyregistry.Handler()) // what kube-scheduler serves at /metrics
	defer srv.Close()
	scrape := func() kubetest.Metrics {
		m, err := kubetest.Scrape(ctx, nil, srv.URL)
		kubetest.Fatal(t, err)
		return m
	}
	waitMetric := func(name string, want float64) {
		t.Helper()
		var got float64
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			got = scrape()[name]
			return got == want, nil
		})
		if err != nil {
			t.Fatalf("/metrics: %s = %v, want %v", name, got, want)
		}
	}
	before := scrape()
	job := func(name string, workers int, model string) kubetest.Job {
		return kubetest.Job{Namespace: "default", Name: name, Workers: workers, GPUsPerWorker: 2, Model: model, PodGroup: true,
			SchedulerName: "inapack-scheduler"}
	}

	bad := job("bad", 1, "gpt-17")
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, bad))
	waitGroupCondition(ctx, t, api.Client, "bad", gang.PlannedCondition, metav1.ConditionFalse, gang.ReasonGangRefused, "unknown model", "NetPackGangRefused")
	waitMetric(`inapack_scheduler_gangs_waiting{reason="GangRefused"}`, 1)

	huge := job("huge", 6, "resnet50")
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, huge))
	waitGroupCondition(ctx, t, api.Client, "huge", gang.PlannedCondition, metav1.ConditionFalse, gang.ReasonNoFit, "12 GPUs", "NetPackNoFit")
	waitMetric(`inapack_scheduler_gangs_waiting{reason="NoFit"}`, 1)

	part := job("part", 2, "resnet50")
	pg, pods := part.Objects()
	_, err := api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	_, err = api.Client.CoreV1().Pods("default").Create(ctx, pods[0], metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	waitMetric(`inapack_scheduler_gangs_waiting{reason="Incomplete"}`, 1)
	if got := scrape()["inapack_scheduler_gangs_planned_total"]; got != before["inapack_scheduler_gangs_planned_total"] {
		t.Errorf("gangs_planned_total went from %v to %v with no gang planned", before["inapack_scheduler_gangs_planned_total"], got)
	}

	good := job("good", 2, "vgg16")
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, good))
	_, err = kubetest.WaitBound(ctx, api.Client, good, 30*time.Second)
	kubetest.Fatal(t, err)
	waitGroupCondition(ctx, t, api.Client, "good", gang.PlannedCondition, metav1.ConditionTrue, gang.ReasonPlanned, "plan default/good#", "NetPackPlanned")
	waitMetric("inapack_scheduler_gangs_planned_total", before["inapack_scheduler_gangs_planned_total"]+1)
	waitMetric("inapack_scheduler_gangs_bound_total", before["inapack_scheduler_gangs_bound_total"]+1)
	after := scrape()
	if n := after["inapack_scheduler_plan_duration_seconds_count"] - before["inapack_scheduler_plan_duration_seconds_count"]; n < 2 {
		t.Errorf("plan_duration_seconds counted %v plans, want at least 2 (huge's failed ones, good's)", n)
	}
	for _, r := range []string{"Permit", "SwitchJob"} {
		if v := after[`inapack_scheduler_gangs_waiting{reason="`+r+`"}`]; v != 0 {
			t.Errorf("gangs_waiting{reason=%q} = %v after the only gang that got a plan is bound", r, v)
		}
	}
	// The waiting gangs are still there, each once.
	for _, r := range []string{"GangRefused", "NoFit", "Incomplete"} {
		if name := `inapack_scheduler_gangs_waiting{reason="` + r + `"}`; after[name]-before[name] != 1 {
			v := after[name] - before[name]
			t.Errorf("gangs_waiting{reason=%q} grew by %v, want 1", r, v)
		}
	}
	// A deleted gang waits no more.
	kubetest.Fatal(t, api.Client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}))
	waitMetric(`inapack_scheduler_gangs_waiting{reason="Incomplete"}`, 0)
}

// TestBrokenPlanRefusedWithoutStall: a gang whose pods carry two plans, one of its pods bound
// (a plan broken after its first bind, which no scheduler can undo), is refused on its pods and
// its PodGroup (GangRefused: cannot be resumed), and the scheduler goes on: a gang submitted after
// it is bound. The refusal is made while the plugin holds its plans' lock, and refuse took that
// lock again: the scheduler stalled for good (this test fails so on be99355).
func TestBrokenPlanRefusedWithoutStall(t *testing.T) {
	ctx, api, _ := start(t)
	j := kubetest.Job{Namespace: "default", Name: "broken", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true,
		SchedulerName: "inapack-scheduler"}
	pg, pods := j.Objects()
	_, err := api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	for i, p := range pods {
		p.Annotations[gang.PlanAnnotation], p.Annotations[gang.NodeAnnotation] = "default/broken#1", "h1"
		if i == 1 {
			p.Annotations[gang.PlanAnnotation] = "default/broken#2"
			p.Spec.NodeName = "h1" // bound by the scheduler that wrote plan #2
		}
	}
	// The bound pod first: the last pod's arrival brings the others back to the queue.
	for _, p := range []*v1.Pod{pods[1], pods[0], pods[2]} {
		_, err := api.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	waitGroupCondition(ctx, t, api.Client, "broken", gang.PlannedCondition, metav1.ConditionFalse, gang.ReasonGangRefused, "cannot be resumed", "NetPackGangRefused")
	waitRefused(ctx, t, api.Client, pods[0].Name, "cannot be resumed")
	good := kubetest.Job{Namespace: "default", Name: "after", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true,
		SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, good))
	_, err = kubetest.WaitBound(ctx, api.Client, good, 30*time.Second)
	kubetest.Fatal(t, err)
}
