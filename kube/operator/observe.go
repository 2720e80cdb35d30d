package operator

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/scheduler"
)

// The operator's metrics, on controller-runtime's registry (served with the manager's own at
// MetricsBindAddress/metrics).
var (
	switchCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inapack_operator_switch_controller_calls_total",
		Help: "Requests to the switch controller's job API, by operation (list, add, remove)."}, []string{"operation"})
	switchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inapack_operator_switch_controller_failures_total",
		Help: "Requests to the switch controller's job API that failed (no answer, or an error status), by operation."}, []string{"operation"})
	gangsInstalled = prometheus.NewCounter(prometheus.CounterOpts{Name: "inapack_operator_gangs_installed_total",
		Help: "Plans whose switch job the operator installed (a reinstall of a running gang is not counted again)."})
	gangsRemoved = prometheus.NewCounter(prometheus.CounterOpts{Name: "inapack_operator_gangs_removed_total",
		Help: "Plans whose switch job the operator removed (the gang ended, or was planned anew)."})
	gangsWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inapack_operator_gangs_waiting",
		Help: "Plans the operator cannot install (or remove) now, by the reason of their condition " + string(InstalledCondition) + "."},
		[]string{"reason"})
)

func init() {
	crmetrics.Registry.MustRegister(switchCalls, switchFailures, gangsInstalled, gangsRemoved, gangsWaiting)
	for _, op := range []string{"list", "add", "remove"} { // present from the start, at 0
		switchCalls.WithLabelValues(op)
		switchFailures.WithLabelValues(op)
	}
}

// counted is the switch controller's client, each call counted by operation.
type counted struct{ scheduler.Controller }

func count(op string, err error) error {
	switchCalls.WithLabelValues(op).Inc()
	if err != nil {
		switchFailures.WithLabelValues(op).Inc()
	}
	return err
}

func (c counted) Jobs(ctx context.Context) ([]cp.JobConfig, error) {
	js, err := c.Controller.Jobs(ctx)
	return js, count("list", err)
}

func (c counted) AddJob(ctx context.Context, j cp.JobConfig) error {
	return count("add", c.Controller.AddJob(ctx, j))
}

func (c counted) RemoveJob(ctx context.Context, id int) error {
	return count("remove", c.Controller.RemoveJob(ctx, id))
}

// metricsServer is the manager's metrics server for cfg: off unless MetricsBindAddress is given;
// served over HTTPS with the API server judging each request (a bearer token, TokenReview and
// SubjectAccessReview: get on the non-resource URL /metrics) when MetricsSecure, which an address
// other than loopback requires.
func metricsServer(cfg Config) (metricsserver.Options, error) {
	addr := cfg.MetricsBindAddress
	if addr == "" || addr == "0" {
		return metricsserver.Options{BindAddress: "0"}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return metricsserver.Options{}, fmt.Errorf("operator: metrics address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && !cfg.MetricsSecure {
		return metricsserver.Options{}, fmt.Errorf("operator: metrics address %q is not loopback: serve it with MetricsSecure (--metrics-secure)", addr)
	}
	o := metricsserver.Options{BindAddress: addr}
	if cfg.MetricsSecure {
		o.SecureServing, o.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	return o, nil
}

// observer keeps the operator's view of each plan for its metrics, and writes each gang's
// condition onto its PodGroup.
type observer struct {
	cs     kubernetes.Interface
	events events.EventRecorder

	mu     sync.Mutex
	plans  map[string]string             // plan id: the reason last reported
	groups map[gang.Key]metav1.Condition // the condition last written on each PodGroup
}

// reported is report's outcome for plan id, in the metrics and on the gang's PodGroup.
func (o *observer) reported(ctx context.Context, pods []*v1.Pod, id string, status v1.ConditionStatus, reason, action, msg string) {
	o.mu.Lock()
	if o.plans == nil || len(o.plans) >= 10000 {
		o.plans, o.groups = map[string]string{}, map[gang.Key]metav1.Condition{} // plans whose pods went before their end
	}
	prev, had := o.plans[id]
	switch {
	case reason == ReasonRemoved:
		if had {
			gangsRemoved.Inc()
		}
		delete(o.plans, id)
	case status == v1.ConditionTrue:
		if prev != ReasonInstalled {
			gangsInstalled.Inc()
		}
		o.plans[id] = reason
	default:
		o.plans[id] = reason
	}
	o.gauge()
	o.mu.Unlock()
	if len(pods) > 0 {
		o.group(ctx, pods[0], status, reason, action, msg)
	}
}

// forget drops plan id, whose pods are all gone.
func (o *observer) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.plans[id]; ok {
		delete(o.plans, id)
		o.gauge()
	}
}

func (o *observer) gauge() {
	n := map[string]int{}
	for _, r := range o.plans {
		if r != ReasonInstalled {
			n[r]++
		}
	}
	gangsWaiting.Reset()
	for r, c := range n {
		gangsWaiting.WithLabelValues(r).Set(float64(c))
	}
}

// group sets the gang's SwitchJobInstalledCondition on its PodGroup (a label gang has none), with
// an event on the PodGroup when it changes.
func (o *observer) group(ctx context.Context, pod *v1.Pod, status v1.ConditionStatus, reason, action, msg string) {
	key, ok := gang.KeyOf(pod)
	if !ok || key.ByLabel {
		return
	}
	cond := metav1.Condition{Type: gang.SwitchJobInstalledCondition, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg}
	o.mu.Lock()
	same := o.groups[key] == cond
	o.mu.Unlock()
	if same {
		return
	}
	pg, wrote, err := gang.SetPodGroupCondition(ctx, o.cs, key, cond)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "setting the PodGroup's condition", "podGroup", key.String(), "reason", reason)
		}
		return
	}
	o.mu.Lock()
	o.groups[key] = cond
	o.mu.Unlock()
	if wrote {
		kind := v1.EventTypeWarning
		if status == v1.ConditionTrue || reason == ReasonRemoved {
			kind = v1.EventTypeNormal
		}
		o.events.Eventf(pg, nil, kind, "INA"+reason, action, "%s", cond.Message)
	}
}
