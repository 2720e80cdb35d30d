package extender_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/inapack/inapack/kube/extender"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// server is the extender on one loopback address across restarts, as its Deployment's Service is
// across the pod's: stop ends the process's part (its informers, its plans in memory, every call
// in flight), start serves a new extender on the same address.
type server struct {
	t      *testing.T
	api    *kubetest.API
	addr   string
	srv    *http.Server
	cancel context.CancelFunc
}

func startServer(ctx context.Context, t *testing.T, api *kubetest.API) *server {
	s := &server{t: t, api: api, addr: "127.0.0.1:0"}
	s.start(ctx)
	t.Cleanup(s.stop)
	return s
}

func (s *server) start(ctx context.Context) {
	s.t.Helper()
	lis, err := net.Listen("tcp", s.addr)
	kubetest.Fatal(s.t, err)
	s.addr = lis.Addr().String()
	ctx, s.cancel = context.WithCancel(ctx)
	x, err := extender.New(ctx, s.api.Client, extender.Config{
		Model:       gang.Config{UplinkGbps: 0.02, INAMemoryBytes: 16384, RTT: time.Millisecond},
		GangTimeout: 10 * time.Second, ReadyTimeout: 20 * time.Second, WaitForOperator: true,
	}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	kubetest.Fatal(s.t, err)
	s.srv = &http.Server{Handler: x.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(lis)
}

// stop closes the listener and every connection (the calls in flight see their context end, as
// kube-scheduler sees its calls fail when the extender's pod dies) and stops the informers.
func (s *server) stop() {
	if s.srv != nil {
		s.srv.Close()
		s.cancel()
		s.srv = nil
	}
}

// scheduler starts the stock kube-scheduler calling s for filter, prioritize and bind.
func (s *server) scheduler(ctx context.Context) {
	ext := fmt.Sprintf(`  - urlPrefix: "http://%s"
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    weight: 10
    nodeCacheCapable: true
    httpTimeout: 150s`, s.addr)
	kubetest.StartScheduler(ctx, s.t, kubetest.SchedulerConfig(s.api, "  - schedulerName: default-scheduler", ext))
}

// fourNodes: h1..h4 of 2 GPUs, two to a rack.
func fourNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	var nodes []*v1.Node
	for i, r := range []string{"tor1", "tor1", "tor2", "tor2"} {
		nodes = append(nodes, kubetest.Node(fmt.Sprintf("h%d", i+1), 2, map[string]string{gang.RackLabel: r}, nil))
	}
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, cs, nodes))
}

// waitPlanned waits until every pod of j carries one plan and returns the pods.
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

// readyAll marks every pod of j Ready for the plan it carries, as the operator does, until ctx
// ends.
func readyAll(ctx context.Context, cs kubernetes.Interface, j kubetest.Job) {
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

// TestExtenderRestartBetweenBinds: the extender restarts after two pods of a gang are bound and
// before the others are; the new extender resumes the plan the pods carry (the same id, the same
// nodes) and binds the rest, rather than planning the gang anew around its bound pods (whose new
// plan no bound pod can follow, so the gang never completes).
func TestExtenderRestartBetweenBinds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	fourNodes(ctx, t, api.Client)
	s := startServer(ctx, t, api)
	s.scheduler(ctx)
	j := kubetest.Job{Namespace: "default", Name: "r", Workers: 3, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	planned := waitPlanned(ctx, t, api.Client, j)
	plan := map[string]string{}
	for _, p := range planned {
		plan[p.Name] = p.Annotations[gang.NodeAnnotation]
	}
	id := planned[0].Annotations[gang.PlanAnnotation]
	for _, name := range []string{"r-ps", "r-worker-0"} {
		p, err := api.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		kubetest.Fatal(t, gang.Annotate(ctx, api.Client, p, map[string]string{gang.ReadyAnnotation: id}))
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		b, err := kubetest.Bound(ctx, api.Client, j)
		return err == nil && len(b) == 2, err
	})
	kubetest.Fatal(t, err)
	s.stop()
	b, _ := kubetest.Bound(ctx, api.Client, j)
	t.Logf("plan %s %v; bound before the restart: %v", id, plan, b)

	s.start(ctx)
	go readyAll(ctx, api.Client, j)
	got, err := kubetest.WaitBound(ctx, api.Client, j, 40*time.Second)
	kubetest.Fatal(t, err)
	for name, n := range got {
		p, err := api.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		if n != plan[name] || p.Annotations[gang.PlanAnnotation] != id {
			t.Errorf("pod %s bound to %s with plan %s; the plan before the restart was %s on %s", name, n, p.Annotations[gang.PlanAnnotation], id, plan[name])
		}
	}
}

// TestExtenderPlannedNodeDeletedBeforeBind: a node of a gang's plan is deleted while the gang's
// pods wait in bind for the operator; the plan is abandoned whole and made anew, and no pod is
// bound to the deleted node or by the old plan.
func TestExtenderPlannedNodeDeletedBeforeBind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	fourNodes(ctx, t, api.Client)
	s := startServer(ctx, t, api)
	s.scheduler(ctx)
	j := kubetest.Job{Namespace: "default", Name: "d", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
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
	// (the time the extender's informer takes to see it).
	go func() {
		time.Sleep(time.Second)
		readyAll(ctx, api.Client, j)
	}()
	got, err := kubetest.WaitBound(ctx, api.Client, j, 60*time.Second)
	kubetest.Fatal(t, err)
	for name, n := range got {
		p, err := api.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		if n == gone {
			t.Errorf("pod %s bound to deleted node %s", name, n)
		}
		if p.Annotations[gang.PlanAnnotation] == id {
			t.Errorf("pod %s bound by plan %s, which put a pod on the deleted node", name, id)
		}
	}
	t.Logf("bound after the deletion: %v", got)
}

// TestExtenderBrokenPlanRefusedAfterRestart: the extender restarts with two of a gang's pods bound,
// and the node its plan gives another pod is deleted meanwhile; the new extender cannot resume
// the plan and may not plan the bound pods anew, so it refuses the gang (gang.ErrBrokenPlan, on
// the pending pods' condition) and binds none of the rest.
func TestExtenderBrokenPlanRefusedAfterRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	fourNodes(ctx, t, api.Client)
	s := startServer(ctx, t, api)
	s.scheduler(ctx)
	j := kubetest.Job{Namespace: "default", Name: "b", Workers: 3, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	planned := waitPlanned(ctx, t, api.Client, j)
	id := planned[0].Annotations[gang.PlanAnnotation]
	plan := map[string]string{}
	for _, p := range planned {
		plan[p.Name] = p.Annotations[gang.NodeAnnotation]
	}
	for _, name := range []string{"b-ps", "b-worker-0"} {
		p, err := api.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		kubetest.Fatal(t, gang.Annotate(ctx, api.Client, p, map[string]string{gang.ReadyAnnotation: id}))
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		b, err := kubetest.Bound(ctx, api.Client, j)
		return err == nil && len(b) == 2, err
	})
	kubetest.Fatal(t, err)
	s.stop()
	gone := plan["b-worker-2"]
	if gone == plan["b-ps"] || gone == plan["b-worker-0"] {
		gone = plan["b-worker-1"]
	}
	kubetest.Fatal(t, api.Client.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}))
	t.Logf("plan %s %v; deleted %s while the extender was down", id, plan, gone)
	s.start(ctx)
	go readyAll(ctx, api.Client, j)
	why, err := kubetest.WaitPending(ctx, api.Client, j, gang.ErrBrokenPlan.Error(), 30*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("pending: %s", why)
	time.Sleep(2 * time.Second)
	b, err := kubetest.Bound(ctx, api.Client, j)
	kubetest.Fatal(t, err)
	if len(b) != 2 {
		t.Errorf("bound %v; want only the two bound before the restart", b)
	}
}
