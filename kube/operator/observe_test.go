package operator_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
)

// freeLoopback is a loopback address with a port free now.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	kubetest.Fatal(t, err)
	defer l.Close()
	return l.Addr().String()
}

// groupCondition waits for the PodGroup's SwitchJobInstalled condition with status and reason,
// and an event INA<reason> on the PodGroup.
func (e *env) groupCondition(t *testing.T, name string, status metav1.ConditionStatus, reason string) string {
	t.Helper()
	var msg string
	e.waitFor(t, "PodGroup "+name+" "+reason, func() (bool, string) {
		pg, err := e.cs().SchedulingV1beta1().PodGroups("default").Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, gang.SwitchJobInstalledCondition)
		if c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Sprintf("condition %+v", c)
		}
		msg = c.Message
		evs, err := e.cs().EventsV1().Events("default").List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.Reason == "INA"+reason && ev.Regarding.Kind == "PodGroup" && ev.Regarding.Name == name {
				return true, ""
			}
		}
		return false, "no event INA" + reason + " on the PodGroup"
	})
	t.Logf("PodGroup %s: %s=%s %s: %s", name, gang.SwitchJobInstalledCondition, status, reason, msg)
	return msg
}

// TestOperatorMetricsAndPodGroupCondition: the operator's /metrics (on loopback) and the gang's
// PodGroup follow a gang through: the controller down (the add fails: a failure counted by
// operation, the gang waiting as ControllerUnavailable, the PodGroup's condition False with that
// reason), installed once the controller answers (installed counted, waiting no more, condition
// True), removed when its workers succeed (removed counted, condition False Removed). A metrics
// address off loopback is refused unless served securely.
func TestOperatorMetricsAndPodGroupCondition(t *testing.T) {
	e := newEnv(t)
	if _, err := operator.Start(e.ctx, e.api.Config, func() operator.Config {
		c := e.cfg
		c.MetricsBindAddress = ":0"
		return c
	}()); err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("an operator serving metrics on every address without --metrics-secure: err %v, want refused", err)
	}
	addr := freeLoopback(t)
	e.cfg.MetricsBindAddress = addr
	url := "http://" + addr + "/metrics"
	e.start(t)
	scrape := func() kubetest.Metrics {
		m, err := kubetest.Scrape(e.ctx, nil, url)
		kubetest.Fatal(t, err)
		return m
	}
	waitMetric := func(name string, want float64) {
		t.Helper()
		e.waitFor(t, fmt.Sprintf("%s = %v", name, want), func() (bool, string) {
			got := scrape()[name]
			return got == want, fmt.Sprintf("%s = %v", name, got)
		})
	}
	before := scrape()
	const (
		add      = `inapack_operator_switch_controller_calls_total{operation="add"}`
		addFails = `inapack_operator_switch_controller_failures_total{operation="add"}`
		list     = `inapack_operator_switch_controller_calls_total{operation="list"}`
		waiting  = `inapack_operator_gangs_waiting{reason="ControllerUnavailable"}`
	)

	down := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				api.WriteJSON(w, http.StatusServiceUnavailable, api.Error{Error: "down for the test"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	e.sc.Wrap(down, nil)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	e.groupCondition(t, "a", metav1.ConditionFalse, operator.ReasonControllerUnavailable)
	waitMetric(waiting, 1)
	mid := scrape()
	if mid[addFails] < before[addFails]+1 || mid[add] < mid[addFails]-before[addFails] {
		t.Errorf("with the controller down: adds %v (before %v), failed %v (before %v)", mid[add], before[add], mid[addFails], before[addFails])
	}
	if mid["inapack_operator_gangs_installed_total"] != before["inapack_operator_gangs_installed_total"] {
		t.Errorf("gangs_installed_total moved with the controller down")
	}

	e.sc.Wrap(func(h http.Handler) http.Handler { return h }, nil)
	pods := e.waitReady(t, "a", pl)
	e.groupCondition(t, "a", metav1.ConditionTrue, operator.ReasonInstalled)
	waitMetric("inapack_operator_gangs_installed_total", before["inapack_operator_gangs_installed_total"]+1)
	waitMetric(waiting, 0)
	up := scrape()
	if ok0, ok1 := mid[add]-mid[addFails], up[add]-up[addFails]; ok0 != before[add]-before[addFails] || ok1 != ok0+1 {
		t.Errorf("adds that succeeded: %v before, %v with the controller down, %v once it is back; want one more, once", before[add]-before[addFails], ok0, ok1)
	}
	if up[list] <= before[list] {
		t.Errorf("list calls %v -> %v: the sync's lists are not counted", before[list], up[list])
	}

	for _, p := range pods[1:] {
		e.setPhase(t, p, v1.PodSucceeded)
	}
	e.groupCondition(t, "a", metav1.ConditionFalse, operator.ReasonRemoved)
	waitMetric("inapack_operator_gangs_removed_total", before["inapack_operator_gangs_removed_total"]+1)
	if got := scrape()[`inapack_operator_switch_controller_calls_total{operation="remove"}`]; got < 1 {
		t.Errorf("remove calls %v after the gang's job was removed", got)
	}
}
