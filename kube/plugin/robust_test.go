package plugin_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/plugin"
)

// operatorProfile waits for the operator's Ready before each bind (the tests play the operator).
var operatorProfile = kubetest.NetPackProfile("uplinkGbps: 0.02", "inaMemoryBytes: 16384", "rtt: 1ms", "permitTimeout: 10s",
	"readyTimeout: 20s", "waitForOperator: true")

func pod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	kubetest.Fatal(t, err)
	return p
}

// waitPlanned waits until every pod of j carries one plan (written before any pod is bound) and
// returns the pods.
func waitPlanned(ctx context.Context, t *testing.T, cs kubernetes.Interface, j kubetest.Job) []*v1.Pod {
	t.Helper()
	_, want := j.Objects()
	var got []*v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got = got[:0]
		ids := map[string]bool{}
		for _, p := range want {
			cur, err := cs.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || cur.Annotations[gang.PlanAnnotation] == "" {
				return false, nil
			}
			ids[cur.Annotations[gang.PlanAnnotation]] = true
			got = append(got, cur)
		}
		return len(ids) == 1, nil
	})
	if err != nil {
		t.Fatalf("gang %s: its pods do not all carry one plan: %v", j.Name, err)
	}
	return got
}

// ready writes the operator's Ready (the pod's current plan) onto the named pods of j.
func ready(ctx context.Context, t *testing.T, cs kubernetes.Interface, j kubetest.Job, names ...string) {
	t.Helper()
	for _, n := range names {
		p := pod(ctx, t, cs, n)
		kubetest.Fatal(t, gang.Annotate(ctx, cs, p, map[string]string{gang.ReadyAnnotation: p.Annotations[gang.PlanAnnotation]}))
	}
}

// operatorStandIn marks every pod of j Ready for the plan it carries, as the operator does, from
// after until ctx ends.
func operatorStandIn(ctx context.Context, cs kubernetes.Interface, j kubetest.Job, after time.Duration) {
	time.Sleep(after)
	_, pods := j.Objects()
	for ctx.Err() == nil {
		for _, p := range pods {
			cur, err := cs.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil && cur.Annotations[gang.PlanAnnotation] != "" && cur.Annotations[gang.ReadyAnnotation] != cur.Annotations[gang.PlanAnnotation] {
				_ = gang.Annotate(ctx, cs, cur, map[string]string{gang.ReadyAnnotation: cur.Annotations[gang.PlanAnnotation]})
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCordonedAndTaintedNodesAvoided: with the nodes NetPack would pick for a gang cordoned and
// tainted, the gang is placed whole on the free nodes elsewhere (the cluster view applies the
// node constraints kube-scheduler's filters do); a gang tolerating the taint may use it.
func TestCordonedAndTaintedNodesAvoided(t *testing.T) {
	ctx, api, topo := start(t)
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "default", Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	preferred, _, err := svc.Place(j)
	kubetest.Fatal(t, err)
	cordoned, tainted := preferred[0], preferred[1]
	n, err := api.Client.CoreV1().Nodes().Get(ctx, cordoned, metav1.GetOptions{})
	kubetest.Fatal(t, err)
	n.Spec.Unschedulable = true
	_, err = api.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	kubetest.Fatal(t, err)
	n, err = api.Client.CoreV1().Nodes().Get(ctx, tainted, metav1.GetOptions{})
	kubetest.Fatal(t, err)
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "gpu-maintenance", Value: "yes", Effect: v1.TaintEffectNoSchedule})
	_, err = api.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	kubetest.Fatal(t, err)
	time.Sleep(500 * time.Millisecond) // the scheduler's informer sees the nodes' updates

	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	nodes, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("NetPack's preferred nodes %v; with %s cordoned and %s tainted the gang runs on %v", preferred, cordoned, tainted, nodes)
	for p, n := range nodes {
		if n == cordoned || n == tainted {
			t.Errorf("pod %s bound to %s, which is cordoned or tainted", p, n)
		}
	}

	// A gang whose pods tolerate the taint may go there (and only the cordoned node is left out).
	tol := kubetest.Job{Namespace: "default", Name: "tolerant", Workers: 1, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	pg, pods := tol.Objects()
	_, err = api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	for _, p := range pods {
		p.Spec.Tolerations = []v1.Toleration{{Key: "gpu-maintenance", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
		_, err = api.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	nodes, err = kubetest.WaitBound(ctx, api.Client, tol, 30*time.Second)
	kubetest.Fatal(t, err)
	for p, n := range nodes {
		if n == cordoned {
			t.Errorf("pod %s bound to cordoned %s", p, n)
		}
	}
	t.Logf("the tolerant gang runs on %v", nodes)
}

// TestRestartBetweenBinds: the scheduler stops after the first pod of a gang is bound and another
// starts; it resumes the plan the pods carry (the same id, the same nodes) and binds the rest,
// rather than planning the bound pods anew or leaving the gang part-started.
func TestRestartBetweenBinds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	cfg := kubetest.SchedulerConfig(api, operatorProfile, "")
	stop := kubetest.StartStoppableScheduler(ctx, t, cfg, app.WithPlugin(plugin.Name, plugin.New))
	nodes := []*v1.Node{}
	for i, r := range []string{"tor1", "tor1", "tor2", "tor2"} {
		nodes = append(nodes, kubetest.Node(fmt.Sprintf("h%d", i+1), 2, map[string]string{gang.RackLabel: r}, nil))
	}
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))
	j := kubetest.Job{Namespace: "default", Name: "r", Workers: 3, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	planned := waitPlanned(ctx, t, api.Client, j)
	plan := map[string]string{}
	for _, p := range planned {
		plan[p.Name] = p.Annotations[gang.NodeAnnotation]
	}
	id := planned[0].Annotations[gang.PlanAnnotation]
	ready(ctx, t, api.Client, j, "r-ps", "r-worker-0")
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		b, err := kubetest.Bound(ctx, api.Client, j)
		return err == nil && len(b) == 2, err
	})
	kubetest.Fatal(t, err)
	stop()
	b, _ := kubetest.Bound(ctx, api.Client, j)
	t.Logf("plan %s %v; bound before the restart: %v", id, plan, b)

	kubetest.StartStoppableScheduler(ctx, t, cfg, app.WithPlugin(plugin.Name, plugin.New))
	go operatorStandIn(ctx, api.Client, j, 0)
	got, err := kubetest.WaitBound(ctx, api.Client, j, 40*time.Second)
	kubetest.Fatal(t, err)
	for name, n := range got {
		p := pod(ctx, t, api.Client, name)
		if n != plan[name] || p.Annotations[gang.PlanAnnotation] != id {
			t.Errorf("pod %s bound to %s with plan %s; the plan before the restart was %s on %s", name, n, p.Annotations[gang.PlanAnnotation], id, plan[name])
		}
	}
}

// TestPlannedNodeDeletedBeforeBind: a node of a gang's plan is deleted while the gang waits for
// the operator; the plan is abandoned whole and made anew, and no pod is bound to the deleted
// node.
func TestPlannedNodeDeletedBeforeBind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(api, operatorProfile, ""), app.WithPlugin(plugin.Name, plugin.New))
	var nodes []*v1.Node
	for i, r := range []string{"tor1", "tor1", "tor2", "tor2"} {
		nodes = append(nodes, kubetest.Node(fmt.Sprintf("h%d", i+1), 2, map[string]string{gang.RackLabel: r}, nil))
	}
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))
	j := kubetest.Job{Namespace: "default", Name: "d", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	planned := waitPlanned(ctx, t, api.Client, j)
	id := planned[0].Annotations[gang.PlanAnnotation]
	var gone string
	for _, p := range planned {
		if p.Labels[gang.RoleLabel] == gang.RoleWorker && p.Annotations[gang.NodeAnnotation] != p.Annotations[gang.PSNodeAnnotation] {
			gone = p.Annotations[gang.NodeAnnotation]
		}
	}
	if gone == "" {
		gone = planned[1].Annotations[gang.NodeAnnotation]
	}
	kubetest.Fatal(t, api.Client.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}))
	t.Logf("plan %s; deleted its node %s", id, gone)
	// The operator installs whatever plan the pods carry, from a moment after the deletion on
	// (the time the scheduler's informer takes to see it).
	go operatorStandIn(ctx, api.Client, j, time.Second)
	got, err := kubetest.WaitBound(ctx, api.Client, j, 60*time.Second)
	kubetest.Fatal(t, err)
	for name, n := range got {
		p := pod(ctx, t, api.Client, name)
		if n == gone {
			t.Errorf("pod %s bound to deleted node %s", name, n)
		}
		if p.Annotations[gang.PlanAnnotation] == id {
			t.Errorf("pod %s bound by plan %s, which put a pod on the deleted node", name, id)
		}
	}
	t.Logf("bound after the deletion: %v", got)
}

// TestLatePodBeyondMinCount: a gang of minCount 2 (a PS and one worker) runs; a second worker
// created later is refused with a condition and an event that say why, and is never bound (no
// Permit wait, no reservation held): minCount is the job's size.
func TestLatePodBeyondMinCount(t *testing.T) {
	ctx, api, _ := start(t)
	j := kubetest.Job{Namespace: "default", Name: "m", Workers: 1, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	_, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	late := kubetest.Job{Namespace: "default", Name: "m", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	_, pods := late.Objects()
	_, err = api.Client.CoreV1().Pods("default").Create(ctx, pods[2], metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	waitRefused(ctx, t, api.Client, pods[2].Name, "minCount")
	if p := pod(ctx, t, api.Client, pods[2].Name); p.Spec.NodeName != "" {
		t.Errorf("late pod %s bound to %s", p.Name, p.Spec.NodeName)
	}
}

// waitRefused waits for the pod's NetPackGangRefused condition and event, both containing want.
// A refusal in PreFilter is also the scheduler's own PodScheduled=False Unschedulable, with the
// same message; whichever write lands last is the pod's condition.
func waitRefused(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, want string) {
	t.Helper()
	var cond, ev string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && (c.Reason == "NetPackGangRefused" || c.Reason == v1.PodReasonUnschedulable) && strings.Contains(c.Message, want) {
				cond = c.Message
			}
		}
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "NetPackGangRefused" && e.Regarding.Name == name && strings.Contains(e.Note, want) {
				ev = e.Note
			}
		}
		return cond != "" && ev != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s: no NetPackGangRefused condition and event containing %q (condition %q, event %q)", name, want, cond, ev)
	}
	t.Logf("pod %s refused: %s", name, cond)
}

// TestGangsRefusedBeforeQueueing: a gang that can never run as written (an unknown model, no PS,
// two PSes) says so on its pods (a condition) and in an event.
func TestGangsRefusedBeforeQueueing(t *testing.T) {
	ctx, api, _ := start(t)
	mk := func(name string, workers int, edit func(pods []*v1.Pod)) string {
		j := kubetest.Job{Namespace: "default", Name: name, Workers: workers, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
		pg, pods := j.Objects()
		edit(pods)
		_, err := api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
		for _, p := range pods {
			_, err := api.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			kubetest.Fatal(t, err)
		}
		return pods[1].Name
	}
	unknown := mk("unknown", 1, func(pods []*v1.Pod) { pods[0].Annotations[gang.ModelAnnotation] = "gpt-17" })
	nops := mk("nops", 2, func(pods []*v1.Pod) {
		pods[0].Labels[gang.RoleLabel] = gang.RoleWorker
		pods[0].Spec.Containers[0].Resources = pods[1].Spec.Containers[0].Resources
	})
	twops := mk("twops", 2, func(pods []*v1.Pod) {
		pods[2].Labels[gang.RoleLabel] = gang.RolePS
		pods[2].Spec.Containers[0].Resources = v1.ResourceRequirements{}
	})
	waitRefused(ctx, t, api.Client, unknown, "unknown model")
	waitRefused(ctx, t, api.Client, nops, "parameter server")
	waitRefused(ctx, t, api.Client, twops, "two PS pods")
}

// TestGangAllOrNone: a pod of a planned gang that kube-scheduler's own filters reject on its
// planned node (a host port NetPack does not model is taken there) holds the whole gang: no pod
// of it is bound while that pod cannot be. With Permit letting every pod go, the others bind.
func TestGangAllOrNone(t *testing.T) {
	ctx, api, topo := start(t)
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "default", Name: "port", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	workers, _, err := svc.Place(j)
	kubetest.Fatal(t, err)
	blocker := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "blocker"},
		Spec: v1.PodSpec{NodeName: workers[0], Containers: []v1.Container{{Name: "c", Image: "x",
			Ports: []v1.ContainerPort{{ContainerPort: 7000, HostPort: 7000}}}}}}
	_, err = api.Client.CoreV1().Pods("default").Create(ctx, blocker, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	pg, pods := j.Objects()
	_, err = api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	for _, p := range pods {
		if p.Labels[gang.RoleLabel] == gang.RoleWorker {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 7000, HostPort: 7000}}
		}
		_, err := api.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	why, err := kubetest.WaitPending(ctx, api.Client, j, "free ports", 30*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("pending: %s", why)
	time.Sleep(2 * time.Second) // ample for the gang's other pods to bind, were they let go
	kubetest.NoneBound(ctx, t, api.Client, j)
}

// TestIncompleteGangNeverQueued: PreEnqueue keeps a gang's pods out of the scheduling queue until
// all exist: while a complete gang submitted after it is scheduled and bound, the incomplete
// gang's pods have no scheduling attempt (no PodScheduled condition, no FailedScheduling event).
func TestIncompleteGangNeverQueued(t *testing.T) {
	ctx, api, _ := start(t)
	var short []kubetest.Job
	for _, pg := range []bool{true, false} {
		j := kubetest.Job{Namespace: "default", Name: fmt.Sprintf("short-%v", pg), Workers: 1, GPUsPerWorker: 2, Model: "resnet50",
			PodGroup: pg, MinCount: 3, SchedulerName: "inapack-scheduler"}
		kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
		short = append(short, j)
	}
	done := kubetest.Job{Namespace: "default", Name: "after", Workers: 1, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, done))
	_, err := kubetest.WaitBound(ctx, api.Client, done, 30*time.Second)
	kubetest.Fatal(t, err)
	time.Sleep(time.Second) // the scheduler writes a failed attempt's condition and event after the attempt
	evs, err := api.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	kubetest.Fatal(t, err)
	for _, j := range short {
		kubetest.NoneBound(ctx, t, api.Client, j)
		_, pods := j.Objects()
		for _, p := range pods {
			cur := pod(ctx, t, api.Client, p.Name)
			for _, c := range cur.Status.Conditions {
				if c.Type == v1.PodScheduled {
					t.Errorf("pod %s of incomplete gang %s was tried: %s %s", p.Name, j.Name, c.Reason, c.Message)
				}
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == p.Name && e.Reason == "FailedScheduling" {
					t.Errorf("pod %s of incomplete gang %s: event %s: %s", p.Name, j.Name, e.Reason, e.Note)
				}
			}
		}
	}
}

// TestConcurrentGangs: gangs submitted at once, from several clients, are each bound whole or
// not at all, and no node holds more GPUs than it has.
func TestConcurrentGangs(t *testing.T) {
	ctx, api, _ := start(t)
	var jobs []kubetest.Job
	for i := range 5 {
		jobs = append(jobs, kubetest.Job{Namespace: "default", Name: fmt.Sprintf("c%d", i), Workers: 2, GPUsPerWorker: 1,
			Model: []string{"resnet50", "vgg16", "bert-base"}[i%3], PodGroup: i%2 == 0, SchedulerName: "inapack-scheduler"})
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := kubetest.Submit(ctx, api.Client, j); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// 10 GPUs; the gangs want 5 x 2 (1-GPU pods, which fit any free GPU): all fit at once.
	var whole int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		whole = 0
		for _, j := range jobs {
			b, err := kubetest.Bound(ctx, api.Client, j)
			if err != nil {
				return false, nil
			}
			if len(b) == j.Workers+1 {
				whole++
			}
		}
		return whole == len(jobs), nil
	})
	if err != nil {
		t.Errorf("%d gangs bound whole, want all %d", whole, len(jobs))
	}
	time.Sleep(time.Second)
	used := map[string]int{}
	for _, j := range jobs {
		b, err := kubetest.Bound(ctx, api.Client, j)
		kubetest.Fatal(t, err)
		if len(b) != 0 && len(b) != j.Workers+1 {
			t.Errorf("gang %s part-bound: %v", j.Name, b)
		}
		for _, pn := range b {
			name, node, _ := strings.Cut(pn, "@")
			used[node] += gang.PodGPUs(pod(ctx, t, api.Client, name))
		}
		t.Logf("gang %s: %v", j.Name, b)
	}
	for n, g := range used {
		if g > 2 {
			t.Errorf("node %s holds %d GPUs of 2", n, g)
		}
	}
}

// TestOneGPUWorkersShareNodes: a gang of 1-GPU worker pods on 2-GPU nodes is placed as NetPack
// places its GPUs, two pods to a node, each with its member index on the node (0, 1) and a rank
// of its own; the PS where NetPack puts it, told that a node may hold one pod of the gang at most
// beside its PS (PSMaxGPUs 1), so the plan moves nothing.
func TestOneGPUWorkersShareNodes(t *testing.T) {
	ctx, api, topo := start(t)
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "default", Name: "small", Workers: 4, GPUsPerWorker: 1, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	wantW, wantPS, err := svc.Place(j)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	nodes, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	members := map[string][]int{}
	ranks := map[int]bool{}
	psNode := ""
	for name, n := range nodes {
		p := pod(ctx, t, api.Client, name)
		if p.Labels[gang.RoleLabel] == gang.RolePS {
			psNode = n
			continue
		}
		m, err := strconv.Atoi(p.Annotations[gang.MemberAnnotation])
		if err != nil {
			t.Errorf("pod %s: %s=%q", name, gang.MemberAnnotation, p.Annotations[gang.MemberAnnotation])
		}
		r, _ := strconv.Atoi(p.Annotations[gang.RankAnnotation])
		ranks[r] = true
		members[n] = append(members[n], m)
	}
	for n, ms := range members {
		slices.Sort(ms)
		if !slices.Equal(ms, []int{0, 1}) {
			t.Errorf("node %s: members %v, want [0 1] (two 1-GPU pods of a 2-GPU node)", n, ms)
		}
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for n := range members {
			if !yield(n) {
				return
			}
		}
	})
	if !slices.Equal(got, slices.Compact(wantW)) {
		t.Errorf("workers on %v; NetPack places the job's GPUs on %v", got, wantW)
	}
	if len(ranks) != 4 {
		t.Errorf("ranks %v: want 4 distinct", ranks)
	}
	if psNode != wantPS || len(members[psNode]) > 1 {
		t.Errorf("PS on %s (worker pods there: %v); NetPack puts it on %s: want it there, with one of the gang's pods at most",
			psNode, members[psNode], wantPS)
	}
	t.Logf("members by node %v, ps %s (NetPack's %s)", members, psNode, wantPS)
}

// TestPodGroupAfterItsPods: a gang's pods created before their PodGroup are held by PreEnqueue
// (the PodGroup does not exist yet); when the PodGroup comes they are queued again and the gang is
// bound, without waiting for the queue's periodic flush of held pods (5 minutes).
func TestPodGroupAfterItsPods(t *testing.T) {
	ctx, api, _ := start(t)
	j := kubetest.Job{Namespace: "default", Name: "late-group", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true,
		SchedulerName: "inapack-scheduler"}
	pg, pods := j.Objects()
	for _, p := range pods {
		_, err := api.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	time.Sleep(2 * time.Second) // PreEnqueue holds the pods: their PodGroup does not exist
	kubetest.NoneBound(ctx, t, api.Client, j)
	_, err := api.Client.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	nodes, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("bound once its PodGroup came: %v", nodes)
}
