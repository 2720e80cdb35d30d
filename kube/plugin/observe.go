package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/inapack/inapack/kube/gang"
)

// The plugin's metrics, on kube-scheduler's registry (legacyregistry: served at the scheduler's
// /metrics with its own, on its secure port).
var (
	gangsPlanned = metrics.NewCounter(&metrics.CounterOpts{Namespace: "inapack", Subsystem: "scheduler", Name: "gangs_planned_total",
		Help: "Gangs NetPack made a plan for (a plan resumed from the pods is not counted again).", StabilityLevel: metrics.ALPHA})
	gangsBound = metrics.NewCounter(&metrics.CounterOpts{Namespace: "inapack", Subsystem: "scheduler", Name: "gangs_bound_total",
		Help: "Gangs whose every pod this scheduler bound to its planned node.", StabilityLevel: metrics.ALPHA})
	planSeconds = metrics.NewHistogram(&metrics.HistogramOpts{Namespace: "inapack", Subsystem: "scheduler", Name: "plan_duration_seconds",
		Help: "Time to plan a gang: the cluster's view and NetPack's placement.", Buckets: metrics.ExponentialBuckets(0.0001, 2, 18),
		StabilityLevel: metrics.ALPHA})
	waitingDesc = metrics.NewDesc("inapack_scheduler_gangs_waiting",
		"Gangs with a pod not bound yet, by what they wait for: Incomplete (their pods), GangRefused (the gang is wrong), NoFit (room), "+
			"Permit (their pods to reserve), SwitchJob (the operator's install).", []string{"reason"}, nil, metrics.ALPHA, "")
	registerMetrics sync.Once
)

// The reasons a gang waits (the gangs_waiting metric's label).
const (
	waitIncomplete = "Incomplete"
	waitPermit     = "Permit"
	waitSwitchJob  = "SwitchJob"
)

// waiting is the gangs waiting, by gang, with what they wait for. An entry goes when its gang
// is bound or, at a scrape, when no pod of it waits any more (deleted gangs). It is the process's,
// not one plugin's: a scheduler started again in the process takes over its gangs' entries.
var waiting = struct {
	sync.Mutex
	m map[gang.Key]waitEntry
}{m: map[gang.Key]waitEntry{}}

type waitEntry struct {
	reason string
	pods   cache.Indexer // the scheduler's pods by gang
}

type waitingCollector struct{ metrics.BaseStableCollector }

func (waitingCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- waitingDesc }

func (waitingCollector) CollectWithStability(ch chan<- metrics.Metric) {
	waiting.Lock()
	defer waiting.Unlock()
	n := map[string]int{}
	for k, e := range waiting.m {
		if !unbound(e.pods, k) {
			delete(waiting.m, k)
			continue
		}
		n[e.reason]++
	}
	for r, c := range n {
		ch <- metrics.NewLazyConstMetric(waitingDesc, metrics.GaugeValue, float64(c), r)
	}
}

// unbound: a pod of gang k waits for a node.
func unbound(pods cache.Indexer, k gang.Key) bool {
	objs, _ := pods.ByIndex(gang.IndexName, k.String())
	for _, o := range objs {
		if p := o.(*v1.Pod); p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

func registerPluginMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(gangsPlanned, gangsBound, planSeconds)
		legacyregistry.CustomMustRegister(&waitingCollector{})
	})
}

// waitsFor records what gang key waits for ("" : nothing, it is bound).
func (p *NetPack) waitsFor(key gang.Key, reason string) {
	waiting.Lock()
	defer waiting.Unlock()
	if reason == "" {
		delete(waiting.m, key)
		return
	}
	waiting.m[key] = waitEntry{reason, p.byGang}
}

// planMade is a new plan's (or a failed planning's) outcome, in the metrics and on the PodGroup.
func (p *NetPack) planMade(ctx context.Context, key gang.Key, start time.Time, plan *gang.Plan, failure string) {
	planSeconds.Observe(time.Since(start).Seconds())
	if plan == nil {
		p.waitsFor(key, gang.ReasonNoFit)
		p.rec.Planned(ctx, key, metav1.ConditionFalse, gang.ReasonNoFit, failure)
		return
	}
	gangsPlanned.Inc()
	p.waitsFor(key, waitPermit)
	p.rec.Planned(ctx, key, metav1.ConditionTrue, gang.ReasonPlanned, fmt.Sprintf("plan %s: %s", plan.ID, plan))
}
