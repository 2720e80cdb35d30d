package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
)

// cluster is deploy/ applied as shipped to an API server with RBAC on, the shipped topology's
// nodes, the real switch controller (in-process reference switches), and a namespace ml for jobs.
type cluster struct {
	ctx   context.Context
	api   *kubetest.API
	sc    *kubetest.SwitchController
	objs  []*unstructured.Unstructured
	sched map[string]any // the shipped KubeSchedulerConfiguration
}

func deployed(t *testing.T) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &cluster{ctx: ctx, api: kubetest.StartAPI(t)}
	// The scheduler reads the gang forms' objects where their CRDs are installed (gang/forms.go),
	// as its account: its start fails if that may not list and watch them.
	kubetest.InstallCRDs(t, c.api, kubetest.CoschedulingCRD, kubetest.JobSetCRD)
	dyn, err := dynamic.NewForConfig(c.api.Config)
	kubetest.Fatal(t, err)
	a := dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.api.Client.Discovery())), commit: true}
	c.objs = render(t, "../../deploy")
	slices.SortStableFunc(c.objs, func(x, y *unstructured.Unstructured) int {
		return btoi(y.GetKind() == "Namespace") - btoi(x.GetKind() == "Namespace")
	})
	for _, o := range c.objs {
		kubetest.Fatal(t, a.apply(ctx, o))
	}
	topoCM := find(c.objs, "ConfigMap", "inapack-topology")
	raw, _, _ := unstructured.NestedString(topoCM.Object, "data", "topology.json")
	topo, err := topology.Parse("deploy/operator/topology.json", []byte(raw))
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, c.api.Client, nodes))
	c.sc = kubetest.StartSwitchController(ctx, t, topo, "failover-test-token")
	schedCM := find(c.objs, "ConfigMap", "ina-kube-scheduler-config")
	if schedCM == nil {
		t.Fatal("deploy/ renders no ConfigMap ina-kube-scheduler-config*")
	}
	for _, v := range schedCM.Object["data"].(map[string]any) {
		kubetest.Fatal(t, yaml.Unmarshal([]byte(v.(string)), &c.sched))
	}
	_, err = c.api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	return c
}

// schedulerConfig is the shipped KubeSchedulerConfiguration with its client's kubeconfig and,
// unless 0, a shorter lease (a standby takes over this long after the leader last renewed).
func (c *cluster) schedulerConfig(t *testing.T, kubeconfig string, lease time.Duration) string {
	t.Helper()
	cfg := map[string]any{}
	b, err := yaml.Marshal(c.sched)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, yaml.Unmarshal(b, &cfg))
	le := cfg["leaderElection"].(map[string]any)
	if le["leaderElect"] != true {
		t.Fatalf("the shipped scheduler config has no leader election: %v", le)
	}
	if lease > 0 {
		le["leaseDuration"], le["renewDeadline"], le["retryPeriod"] = lease.String(), (lease * 2 / 3).String(), (lease / 6).String()
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 200, "burst": 400}
	b, err = yaml.Marshal(cfg)
	kubetest.Fatal(t, err)
	return string(b)
}

// startOperator starts an operator replica as deploy/ runs it (leader election in
// inapack-system), its client rc.
func (c *cluster) startOperator(t *testing.T, rc *rest.Config, lease time.Duration, lg *logr.Logger) *operator.Operator {
	t.Helper()
	o, err := operator.Start(c.ctx, rc, operator.Config{Controller: c.sc.Client,
		Topology: types.NamespacedName{Namespace: "inapack-system", Name: "inapack-topology"}, LeaderElection: true,
		LeaderElectionNamespace: "inapack-system", LeaseDuration: lease, SyncInterval: time.Second, MaxRetryDelay: time.Second, Logger: lg})
	kubetest.Fatal(t, err)
	t.Cleanup(func() { _ = o.Stop() })
	return o
}

// leaseHolder is the holder of Lease inapack-system/name ("" if none yet).
func (c *cluster) leaseHolder(name string) string {
	l, err := c.api.Client.CoordinationV1().Leases("inapack-system").Get(c.ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (c *cluster) waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// pods are j's pods as they are now, PS first.
func (c *cluster) pods(t *testing.T, j kubetest.Job) []*v1.Pod {
	t.Helper()
	_, want := j.Objects()
	var out []*v1.Pod
	for _, p := range want {
		cur, err := c.api.Client.CoreV1().Pods(j.Namespace).Get(c.ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		out = append(out, cur)
	}
	return out
}

// wholeOnPlan checks that every pod of j is bound to the node of one plan, the same on each pod,
// and returns it.
func (c *cluster) wholeOnPlan(t *testing.T, j kubetest.Job) string {
	t.Helper()
	pods := c.pods(t, j)
	id := pods[0].Annotations[gang.PlanAnnotation]
	for _, p := range pods {
		if p.Annotations[gang.PlanAnnotation] != id || id == "" {
			t.Errorf("pod %s has plan %q, pod %s has %q: not one plan", p.Name, p.Annotations[gang.PlanAnnotation], pods[0].Name, id)
		}
		if p.Spec.NodeName == "" || p.Spec.NodeName != p.Annotations[gang.NodeAnnotation] {
			t.Errorf("pod %s bound to %q, its plan puts it on %q", p.Name, p.Spec.NodeName, p.Annotations[gang.NodeAnnotation])
		}
		if p.Annotations[gang.ReadyAnnotation] != id {
			t.Errorf("pod %s bound without its switch job installed (ready %q, plan %q)", p.Name, p.Annotations[gang.ReadyAnnotation], id)
		}
	}
	return id
}

// oneJob checks that the switch controller holds exactly the gang's switch job (the one its pods
// record) and returns its id.
func (c *cluster) oneJob(t *testing.T, j kubetest.Job) int {
	t.Helper()
	jobs, err := c.sc.Client.Jobs(c.ctx)
	kubetest.Fatal(t, err)
	want := c.pods(t, j)[0].Annotations[gang.SwitchJobAnnotation]
	if len(jobs) != 1 || fmt.Sprint(jobs[0].ID) != want || jobs[0].Owner != operator.Name {
		t.Fatalf("switch controller jobs %+v, want only the gang's switch job %s, owned by %s", jobs, want, operator.Name)
	}
	return jobs[0].ID
}

// finish ends j as its kubelets would (every worker succeeds) and waits until nothing of it is
// left: no job on the switch controller, no finalizer, the PS deleted.
func (c *cluster) finish(t *testing.T, j kubetest.Job) {
	t.Helper()
	_, pods := j.Objects()
	for _, p := range pods[1:] {
		kubetest.Fatal(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := c.api.Client.CoreV1().Pods(j.Namespace).Get(c.ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = v1.PodSucceeded
			_, err = c.api.Client.CoreV1().Pods(j.Namespace).UpdateStatus(c.ctx, cur, metav1.UpdateOptions{})
			return err
		}))
	}
	c.waitFor(t, "nothing of gang "+j.Name+" left", 60*time.Second, func() (bool, string) {
		jobs, err := c.sc.Client.Jobs(c.ctx)
		if err != nil || len(jobs) > 0 {
			return false, fmt.Sprintf("controller jobs %+v (%v)", jobs, err)
		}
		for _, p := range pods {
			cur, err := c.api.Client.CoreV1().Pods(j.Namespace).Get(c.ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err.Error()
			}
			if slices.Contains(cur.Finalizers, gang.Finalizer) {
				return false, "pod " + p.Name + " keeps the finalizer"
			}
			if cur.Labels[gang.RoleLabel] == gang.RolePS && cur.DeletionTimestamp == nil {
				return false, "the PS is not deleted"
			}
		}
		return true, ""
	})
}

var bindingPath = regexp.MustCompile(`^/api/v1/namespaces/ml/pods/([^/]+)/binding$`)

// TestSchedulerFailoverMidGang: two replicas of ina-kube-scheduler (the shipped configuration,
// kube-scheduler's own leader election on its Lease, as the ServiceAccount) and the operator. The
// leader plans a gang, writes the plan onto its pods and binds the first of them; its other binds
// never reach the API server, and it is killed (cut off from the API server, so it cannot even
// give up its Lease, then stopped). The standby takes the Lease over and finishes the gang: every
// pod bound to the node of the plan the first leader wrote (resumed, not planned anew), with its
// switch job installed, one job on the switch controller; when the gang ends nothing is left.
func TestSchedulerFailoverMidGang(t *testing.T) {
	c := deployed(t)
	c.startOperator(t, c.api.As("inapack-system", "ina-operator"), 0, nil)
	const lease = 3 * time.Second
	asScheduler := c.api.As("inapack-system", "ina-kube-scheduler")

	// The first replica's binds after the first are held, and it is told so.
	var mu sync.Mutex
	var bindings []string
	held := make(chan string, 1)
	proxyA := kubetest.StartProxy(t, asScheduler, func(r *http.Request) bool {
		m := bindingPath.FindStringSubmatch(r.URL.Path)
		if r.Method != http.MethodPost || m == nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		bindings = append(bindings, m[1])
		if len(bindings) == 1 {
			return false
		}
		select {
		case held <- m[1]:
		default:
		}
		return true
	})
	a := kubetest.StartElectedScheduler(c.ctx, t, c.schedulerConfig(t, proxyA.Kubeconfig, lease), app.WithPlugin(plugin.Name, plugin.New))
	select {
	case <-a.Leading():
	case <-time.After(30 * time.Second):
		t.Fatal("the first replica does not lead within 30s")
	}
	proxyB := kubetest.StartProxy(t, asScheduler, nil)
	b := kubetest.StartElectedScheduler(c.ctx, t, c.schedulerConfig(t, proxyB.Kubeconfig, lease), app.WithPlugin(plugin.Name, plugin.New))
	if h := c.leaseHolder("ina-kube-scheduler"); h != a.Identity {
		t.Fatalf("Lease ina-kube-scheduler held by %q, want the first replica %q", h, a.Identity)
	}

	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(c.ctx, c.api.Client, j))
	select {
	case p := <-held:
		t.Logf("the leader's bind of %s is held", p)
	case <-time.After(60 * time.Second):
		t.Fatal("the leader sent no second bind within 60s")
	}
	var plan string
	c.waitFor(t, "the leader's first bind", 10*time.Second, func() (bool, string) {
		bound, err := kubetest.Bound(c.ctx, c.api.Client, j)
		return err == nil && len(bound) == 1, fmt.Sprintf("bound %v (%v)", bound, err)
	})
	for _, p := range c.pods(t, j) {
		if plan == "" {
			plan = p.Annotations[gang.PlanAnnotation]
		}
		if id := p.Annotations[gang.PlanAnnotation]; id == "" || id != plan {
			t.Fatalf("pod %s: plan %q at the kill, want every pod on one plan (%q)", p.Name, id, plan)
		}
	}
	proxyA.Cut()
	a.Stop()
	t.Logf("killed the leader %s with 1 of %d pods bound (plan %s)", a.Identity, j.Workers+1, plan)

	select {
	case <-b.Leading():
	case <-time.After(30 * time.Second):
		t.Fatal("the standby does not lead within 30s of the leader's death")
	}
	nodes, err := kubetest.WaitBound(c.ctx, c.api.Client, j, 90*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("the standby %s bound the gang: %v", b.Identity, nodes)
	if got := c.wholeOnPlan(t, j); got != plan {
		t.Errorf("the gang runs on plan %s, the leader had bound a pod on plan %s", got, plan)
	}
	if h := c.leaseHolder("ina-kube-scheduler"); h != b.Identity {
		t.Errorf("Lease ina-kube-scheduler held by %q, want the standby %q", h, b.Identity)
	}
	id := c.oneJob(t, j)
	t.Logf("switch controller: job %d only", id)
	c.finish(t, j)
}

// TestOperatorFailoverMidGang: two replicas of the operator (leader election, as the
// ServiceAccount) and ina-kube-scheduler. The leader writes a gang's wiring and adds its switch
// job; the moment the switch controller has it, and before the leader has made any pod Ready, the
// leader is killed (cut off from the API server, then stopped): no pod of the gang is bound. The
// standby takes the Lease over, finds the install cut short on the pods and finishes it with the
// same switch job (no second one on the controller); the scheduler binds the whole gang on the
// plan whose install the leader began (not planned anew after its pods' ready timeout); when it
// ends nothing is left on the switch controller.
func TestOperatorFailoverMidGang(t *testing.T) {
	c := deployed(t)
	kubetest.StartElectedScheduler(c.ctx, t, c.schedulerConfig(t, c.api.KubeconfigAs(t, "inapack-system", "ina-kube-scheduler"), 0),
		app.WithPlugin(plugin.Name, plugin.New))
	const lease = 3 * time.Second
	asOperator := c.api.As("inapack-system", "ina-operator")

	// The controller's answer to the first job added waits until the test lets it go.
	added, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.sc.Wrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first := false
			if r.Method == http.MethodPost {
				once.Do(func() { first = true })
			}
			if !first {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(added)
			<-release
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	}, nil)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	proxyA := kubetest.StartProxy(t, asOperator, nil)
	a := c.startOperator(t, proxyA.Config(), lease, nil)
	c.waitFor(t, "the first operator to lead", 30*time.Second, func() (bool, string) {
		return c.leaseHolder(operator.Name) != "", "no holder of Lease " + operator.Name
	})
	leader := c.leaseHolder(operator.Name)
	proxyB := kubetest.StartProxy(t, asOperator, nil)
	c.startOperator(t, proxyB.Config(), lease, nil)

	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(c.ctx, c.api.Client, j))
	select {
	case <-added:
	case <-time.After(60 * time.Second):
		t.Fatal("the leader added no switch job within 60s")
	}
	proxyA.Cut()
	close(release)
	_ = a.Stop()
	jobs, err := c.sc.Client.Jobs(c.ctx)
	kubetest.Fatal(t, err)
	if len(jobs) != 1 {
		t.Fatalf("switch controller jobs %+v at the kill, want the gang's", jobs)
	}
	plan := c.pods(t, j)[0].Annotations[gang.PlanAnnotation]
	for _, p := range c.pods(t, j) {
		if p.Spec.NodeName != "" || p.Annotations[gang.ReadyAnnotation] != "" {
			t.Fatalf("pod %s bound to %q, ready %q at the kill: the leader got further than the switch job", p.Name, p.Spec.NodeName, p.Annotations[gang.ReadyAnnotation])
		}
	}
	t.Logf("killed the operator %s with switch job %d installed and no pod ready", leader, jobs[0].ID)

	nodes, err := kubetest.WaitBound(c.ctx, c.api.Client, j, 90*time.Second)
	kubetest.Fatal(t, err)
	if h := c.leaseHolder(operator.Name); h == leader || h == "" {
		t.Errorf("Lease %s held by %q after the leader %q died", operator.Name, h, leader)
	}
	t.Logf("the standby finished the install, the gang is bound: %v", nodes)
	if got := c.wholeOnPlan(t, j); got != plan {
		t.Errorf("the gang runs on plan %s, not on the plan %s whose install the leader began: it was planned anew", got, plan)
	}
	if id := c.oneJob(t, j); id != jobs[0].ID {
		t.Errorf("the gang runs with switch job %d, the leader installed %d", id, jobs[0].ID)
	}
	c.finish(t, j)
}
