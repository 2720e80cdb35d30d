package extender_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/extender"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

const twoRacks = "../../bmv2/topologies/two-racks/topology.json"

// env is one API server, the extender over HTTP and the stock kube-scheduler (its default
// profile) calling it for filter, prioritize and bind, with Nodes for the two-racks topology. The
// cases share it (kube-scheduler registers process-wide state and starts once per process), each
// in its own namespace, deleting its pods when done. The model is the scheduler service's for that
// topology (uplink 20 Mbit/s, 64 slots of 256 B, 1 ms hold), so placements compare with the
// service's. The extender waits for the operator's Ready: a stand-in marks every planned pod
// Ready except those of the gangs a case holds (this test has no switches).
type env struct {
	api  *kubetest.API
	topo *topology.Topology
	mu   sync.Mutex
	held map[string]bool // namespace/job
}

func startEnv(ctx context.Context, t *testing.T) *env {
	t.Helper()
	e := &env{api: kubetest.StartAPI(t), held: map[string]bool{}}
	var err error
	e.topo, err = topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(e.topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, e.api.Client, nodes))
	x, err := extender.New(ctx, e.api.Client, extender.Config{
		Model:       gang.Config{UplinkGbps: 0.02, INAMemoryBytes: 16384, RTT: time.Millisecond},
		GangTimeout: 60 * time.Second, ReadyTimeout: 60 * time.Second, WaitForOperator: true,
	}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	kubetest.Fatal(t, err)
	srv := httptest.NewServer(x.Handler())
	t.Cleanup(srv.Close)
	ext := fmt.Sprintf(`  - urlPrefix: %q
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    weight: 10
    nodeCacheCapable: true
    httpTimeout: 150s`, srv.URL)
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(e.api, "  - schedulerName: default-scheduler", ext))
	go e.operatorStandIn(ctx)
	return e
}

func (e *env) hold(ns, job string, held bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held[ns+"/"+job] = held
}

// operatorStandIn marks planned pods Ready, as the operator does once a gang is on the switches.
func (e *env) operatorStandIn(ctx context.Context) {
	for ctx.Err() == nil {
		l, err := e.api.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range l.Items {
				p := &l.Items[i]
				plan := p.Annotations[gang.PlanAnnotation]
				e.mu.Lock()
				job, _, _ := strings.Cut(p.Name, "-") // the cases' job names have no dash
				held := e.held[p.Namespace+"/"+job]
				e.mu.Unlock()
				if plan != "" && p.Annotations[gang.ReadyAnnotation] != plan && !held {
					_ = gang.Annotate(ctx, e.api.Client, p, map[string]string{gang.ReadyAnnotation: plan})
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// namespace makes a case's namespace and, when the case ends, deletes its pods at once (no
// kubelet runs them) and waits until they are gone, so the next case starts on an empty cluster.
func (e *env) namespace(ctx context.Context, t *testing.T, name string) *kubetest.Service {
	t.Helper()
	_, err := e.api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	t.Cleanup(func() {
		zero := int64(0)
		_ = e.api.Client.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := e.api.Client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		})
	})
	svc, err := kubetest.NewService(e.topo)
	kubetest.Fatal(t, err)
	return svc
}

// TestExtender runs the stock kube-scheduler with the extender through the three cases of issue
// 22 (subtests).
func TestExtender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := startEnv(ctx, t)
	t.Run("WholeGangs", func(t *testing.T) { wholeGangs(ctx, t, e) })
	t.Run("CountsPodsBeingBound", func(t *testing.T) { countsPodsBeingBound(ctx, t, e) })
	t.Run("GangThatCannotFitStartsNoPod", func(t *testing.T) { cannotFit(ctx, t, e) })
	t.Run("CordonedNodeAvoided", func(t *testing.T) { cordonedNodeAvoided(ctx, t, e) })
	t.Run("RefusedGangRecorded", func(t *testing.T) { refusedGangRecorded(ctx, t, e) })
}

// refusedGangRecorded: a gang that can never run as written (an unknown model) is refused where
// its user looks, as the plugin refuses it: a Warning event NetPackGangRefused on its pod, the
// pod's PodScheduled=False saying why, and on its PodGroup inapack.io/Planned=False GangRefused
// with an event; no pod of it is bound.
func refusedGangRecorded(ctx context.Context, t *testing.T, e *env) {
	e.namespace(ctx, t, "refused")
	bad := kubetest.Job{Namespace: "refused", Name: "bad", Workers: 1, GPUsPerWorker: 2, Model: "gpt-17", PodGroup: true}
	kubetest.Fatal(t, kubetest.Submit(ctx, e.api.Client, bad))
	ev, err := kubetest.WaitPodEvent(ctx, e.api.Client, bad, gang.ReasonPodRefused, "unknown model", 30*time.Second)
	kubetest.Fatal(t, err)
	why, err := kubetest.WaitPending(ctx, e.api.Client, bad, "unknown model", 30*time.Second)
	kubetest.Fatal(t, err)
	cond, err := kubetest.WaitGroupCondition(ctx, e.api.Client, "refused", "bad", gang.PlannedCondition, metav1.ConditionFalse,
		gang.ReasonGangRefused, "unknown model", "NetPack"+gang.ReasonGangRefused, 30*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("event %s; pod %s; PodGroup %s", ev, why, cond)
	kubetest.NoneBound(ctx, t, e.api.Client, bad)
}

// cordonedNodeAvoided: with the node NetPack would pick for a gang's worker cordoned, the gang
// is placed whole on the free nodes elsewhere, not planned onto the cordoned node again and again.
func cordonedNodeAvoided(ctx context.Context, t *testing.T, e *env) {
	svc := e.namespace(ctx, t, "cordon")
	j := kubetest.Job{Namespace: "cordon", Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
	preferred, _, err := svc.Place(j)
	kubetest.Fatal(t, err)
	setUnschedulable := func(v bool) {
		n, err := e.api.Client.CoreV1().Nodes().Get(ctx, preferred[0], metav1.GetOptions{})
		kubetest.Fatal(t, err)
		n.Spec.Unschedulable = v
		_, err = e.api.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		kubetest.Fatal(t, err)
	}
	setUnschedulable(true)
	t.Cleanup(func() { setUnschedulable(false) })
	time.Sleep(500 * time.Millisecond) // the informers see the cordon
	kubetest.Fatal(t, kubetest.Submit(ctx, e.api.Client, j))
	nodes, err := kubetest.WaitBound(ctx, e.api.Client, j, 60*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("preferred %v; with %s cordoned: %v", preferred, preferred[0], nodes)
	for p, n := range nodes {
		if n == preferred[0] {
			t.Errorf("pod %s bound to cordoned %s", p, n)
		}
	}
}

// checkPlaced: every pod of j is bound where the service places j, and all carry one plan.
func checkPlaced(ctx context.Context, t *testing.T, api *kubetest.API, svc *kubetest.Service, j kubetest.Job, nodes map[string]string) {
	t.Helper()
	gotW, gotPS := kubetest.Placed(j, nodes)
	wantW, wantPS, err := svc.Place(j)
	kubetest.Fatal(t, err)
	t.Logf("gang %s: workers %v ps %s (service: %v ps %s)", j.Name, gotW, gotPS, wantW, wantPS)
	if !slices.Equal(gotW, wantW) || gotPS != wantPS {
		t.Errorf("gang %s placed on workers %v ps %s; the scheduler service places it on %v ps %s", j.Name, gotW, gotPS, wantW, wantPS)
	}
	plans := map[string]bool{}
	_, pods := j.Objects()
	for _, p := range pods {
		cur, err := api.Client.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		plans[cur.Annotations[gang.PlanAnnotation]] = true
		if cur.Annotations[gang.NodeAnnotation] != cur.Spec.NodeName {
			t.Errorf("pod %s: bound to %s, its plan says %q", p.Name, cur.Spec.NodeName, cur.Annotations[gang.NodeAnnotation])
		}
	}
	if len(plans) != 1 || plans[""] {
		t.Errorf("gang %s: its pods carry plans %v, want one", j.Name, plans)
	}
}

// wholeGangs: gangs (a PodGroup, and label gangs without any per-pod GPU annotation) are placed
// as the scheduler service places the whole job: the second worker of a two-worker job lands in
// the same plan as the first.
func wholeGangs(ctx context.Context, t *testing.T, e *env) {
	svc := e.namespace(ctx, t, "whole")
	for _, j := range []kubetest.Job{
		{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true},
		{Name: "b", Workers: 2, GPUsPerWorker: 2, Model: "resnet50"},
	} {
		j.Namespace = "whole"
		kubetest.Fatal(t, kubetest.Submit(ctx, e.api.Client, j))
		nodes, err := kubetest.WaitBound(ctx, e.api.Client, j, 60*time.Second)
		kubetest.Fatal(t, err)
		checkPlaced(ctx, t, e.api, svc, j, nodes)
		if j.PodGroup {
			_, err := kubetest.WaitGroupCondition(ctx, e.api.Client, "whole", j.Name, gang.PlannedCondition, metav1.ConditionTrue,
				gang.ReasonPlanned, "plan ", "NetPack"+gang.ReasonPlanned, 30*time.Second)
			kubetest.Fatal(t, err)
		}
	}
}

// countsPodsBeingBound: gang a is planned and its pods wait in bind (the operator has not
// installed it yet, so the API shows none of them bound); gang b, submitted then, is planned
// around a's pods and bound first, where the service places b after a; a binds once released.
func countsPodsBeingBound(ctx context.Context, t *testing.T, e *env) {
	svc := e.namespace(ctx, t, "binding")
	api := e.api
	a := kubetest.Job{Namespace: "binding", Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16"}
	b := kubetest.Job{Namespace: "binding", Name: "b", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true}
	e.hold("binding", "a", true)
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, a))
	_, aPods := a.Objects()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range aPods {
			cur, err := api.Client.CoreV1().Pods("binding").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || cur.Annotations[gang.PlanAnnotation] == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("gang a's pods never reached bind: %v", err)
	}
	kubetest.NoneBound(ctx, t, api.Client, a)
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, b))
	bNodes, err := kubetest.WaitBound(ctx, api.Client, b, 60*time.Second)
	kubetest.Fatal(t, err)
	kubetest.NoneBound(ctx, t, api.Client, a) // b was planned while a was invisible in the API
	e.hold("binding", "a", false)
	aNodes, err := kubetest.WaitBound(ctx, api.Client, a, 60*time.Second)
	kubetest.Fatal(t, err)
	checkPlaced(ctx, t, api, svc, a, aNodes)
	checkPlaced(ctx, t, api, svc, b, bNodes)
}

// cannotFit: a gang that fits the cluster but not what is free
// while another runs gets no node for any pod, and its pods say why.
func cannotFit(ctx context.Context, t *testing.T, e *env) {
	e.namespace(ctx, t, "nofit")
	api := e.api
	a := kubetest.Job{Namespace: "nofit", Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, a))
	_, err := kubetest.WaitBound(ctx, api.Client, a, 60*time.Second)
	kubetest.Fatal(t, err)
	for _, pg := range []bool{false, true} {
		big := kubetest.Job{Namespace: "nofit", Name: fmt.Sprintf("big%v", pg), Workers: 4, GPUsPerWorker: 2, Model: "resnet50", PodGroup: pg}
		kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, big))
		// kube-scheduler schedules a PodGroup's pods as one unit: the pod the extender turned
		// down carries its reason, the others the group's.
		why, err := kubetest.WaitPending(ctx, api.Client, big, "NetPack cannot place", 60*time.Second)
		kubetest.Fatal(t, err)
		t.Logf("gang %s pending because: %s", big.Name, why)
		if pg {
			cond, err := kubetest.WaitGroupCondition(ctx, api.Client, "nofit", big.Name, gang.PlannedCondition, metav1.ConditionFalse,
				gang.ReasonNoFit, "NetPack cannot place", "NetPack"+gang.ReasonNoFit, 30*time.Second)
			kubetest.Fatal(t, err)
			t.Logf("PodGroup %s: %s", big.Name, cond)
		}
		time.Sleep(2 * time.Second) // kube-scheduler retries; none of its pods may bind meanwhile
		kubetest.NoneBound(ctx, t, api.Client, big)
	}
}
