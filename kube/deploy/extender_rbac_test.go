package deploy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/extender"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
)

// Write takes slog's text lines (the extender logs with slog) into the capture.
func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		c.lines++
		if forbiddenRE.MatchString(l) {
			c.forbidden = append(c.forbidden, l)
		}
	}
	return len(p), nil
}

// extenderConfig is the model and waits the shipped Deployment's command line gives
// ina-kube-extender (its flags of the same names).
func extenderConfig(t *testing.T, dep *unstructured.Unstructured) extender.Config {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("Deployment ina-kube-extender has %d containers, want 1", len(cs))
	}
	cmd, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "command")
	cfg := extender.Config{WaitForOperator: true}
	for _, arg := range cmd {
		k, v, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		var err error
		switch k {
		case "nic-gbps":
			cfg.Model.NICGbps, err = strconv.ParseFloat(v, 64)
		case "uplink-gbps":
			cfg.Model.UplinkGbps, err = strconv.ParseFloat(v, 64)
		case "wait-for-operator":
			cfg.WaitForOperator, err = strconv.ParseBool(v)
		}
		kubetest.Fatal(t, err)
	}
	return cfg
}

// TestExtenderRBACFinishesAGang: deploy/ and deploy/extender applied as shipped to an API server
// with the RBAC authorizer on; the stock kube-scheduler runs as system:kube-scheduler (its
// bootstrap role, as on a kubeadm control plane) with deploy/extender's kube-scheduler-config.yaml
// (the extender's URL made this test's loopback one, without TLS), ina-kube-extender as its
// ServiceAccount ina-kube-extender with the model and waits of its Deployment's command line,
// and the operator as ina-operator. A gang with the default scheduler name is planned by the
// extender, installed on the switch controller by the operator, bound by the extender; when its
// workers succeed the job leaves the controller, the PS is deleted and every finalizer is lifted;
// no log line of any of them says forbidden. The extender's account is really limited: it may not
// delete pods or read Secrets.
func TestExtenderRBACFinishesAGang(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capture := &logCapture{}
	lg := capture.logger()
	klog.SetLogger(lg)
	t.Cleanup(klog.ClearLogger)

	api := kubetest.StartAPI(t)
	dyn, err := dynamic.NewForConfig(api.Config)
	kubetest.Fatal(t, err)
	a := dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(api.Client.Discovery())), commit: true}
	objs := append(render(t, "../../deploy"), render(t, "../../deploy/extender")...)
	slices.SortStableFunc(objs, func(x, y *unstructured.Unstructured) int {
		return btoi(y.GetKind() == "Namespace") - btoi(x.GetKind() == "Namespace")
	})
	for _, o := range objs {
		kubetest.Fatal(t, a.apply(ctx, o))
	}

	topoCM := find(objs, "ConfigMap", "inapack-topology")
	raw, _, _ := unstructured.NestedString(topoCM.Object, "data", "topology.json")
	topo, err := topology.Parse("deploy/operator/topology.json", []byte(raw))
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))
	sc := kubetest.StartSwitchController(ctx, t, topo, "rbac-test-token")

	// The extender as its ServiceAccount; its informers sync only if the account may list and
	// watch what it reads.
	dep := find(objs, "Deployment", "ina-kube-extender")
	if dep == nil {
		t.Fatal("deploy/extender renders no Deployment ina-kube-extender")
	}
	if sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName"); sa != "ina-kube-extender" {
		t.Fatalf("Deployment ina-kube-extender runs as %q, want ina-kube-extender", sa)
	}
	extCS := kubernetes.NewForConfigOrDie(api.As("inapack-system", "ina-kube-extender"))
	type made struct {
		x   *extender.Extender
		err error
	}
	cfg := extenderConfig(t, dep)
	ch := make(chan made, 1)
	go func() {
		x, err := extender.New(ctx, extCS, cfg, slog.New(slog.NewTextHandler(capture, nil)))
		ch <- made{x, err}
	}()
	var x *extender.Extender
	select {
	case m := <-ch:
		kubetest.Fatal(t, m.err)
		x = m.x
	case <-time.After(60 * time.Second):
		_, f := capture.report()
		t.Fatalf("the extender's informers did not sync within 60s as ina-kube-extender; forbidden in the logs: %q", f)
	}
	srv := httptest.NewServer(x.Handler())
	defer srv.Close()

	// The stock kube-scheduler with the shipped extender configuration, as system:kube-scheduler.
	b, err := os.ReadFile("../../deploy/extender/kube-scheduler-config.yaml")
	kubetest.Fatal(t, err)
	var schedCfg map[string]any
	kubetest.Fatal(t, yaml.Unmarshal(b, &schedCfg))
	exts, _ := schedCfg["extenders"].([]any)
	if len(exts) != 1 {
		t.Fatalf("kube-scheduler-config.yaml has %d extenders, want 1", len(exts))
	}
	ext := exts[0].(map[string]any)
	ext["urlPrefix"] = srv.URL
	delete(ext, "enableHTTPS")
	delete(ext, "tlsConfig")
	schedUser := rest.CopyConfig(api.Config)
	schedUser.Impersonate = rest.ImpersonationConfig{UserName: "system:kube-scheduler"}
	kc := filepath.Join(t.TempDir(), "kubeconfig-kube-scheduler")
	kubetest.Fatal(t, kubetest.WriteKubeconfig(schedUser, kc))
	schedCfg["leaderElection"] = map[string]any{"leaderElect": false}
	schedCfg["clientConnection"] = map[string]any{"kubeconfig": kc, "qps": 200, "burst": 400}
	b, err = yaml.Marshal(schedCfg)
	kubetest.Fatal(t, err)
	kubetest.StartScheduler(ctx, t, string(b))

	o, err := operator.Start(ctx, api.As("inapack-system", "ina-operator"), operator.Config{Controller: sc.Client,
		Topology: types.NamespacedName{Namespace: "inapack-system", Name: "inapack-topology"}, LeaderElection: true,
		LeaderElectionNamespace: "inapack-system", SyncInterval: time.Second, MaxRetryDelay: time.Second, Logger: &lg})
	kubetest.Fatal(t, err)
	defer o.Stop()

	if err := extCS.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the extender's account deleted pods (err %v)", err)
	}
	if _, err := extCS.CoreV1().Secrets("inapack-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the extender's account listed Secrets (err %v): the API server does not judge it by RBAC", err)
	}

	_, err = api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	bound, err := kubetest.WaitBound(ctx, api.Client, j, 90*time.Second)
	if err != nil {
		_, f := capture.report()
		t.Fatalf("%v; forbidden in the logs: %q", err, f)
	}
	t.Logf("gang bound: %v", bound)
	// The extender's account writes the gang's PodGroup condition and its event.
	cond, err := kubetest.WaitGroupCondition(ctx, api.Client, "ml", "mlp", gang.PlannedCondition, metav1.ConditionTrue, gang.ReasonPlanned,
		"plan ", "NetPack"+gang.ReasonPlanned, 30*time.Second)
	if err != nil {
		_, f := capture.report()
		t.Fatalf("%v; forbidden in the logs: %q", err, f)
	}
	t.Logf("PodGroup mlp: %s", cond)
	_, pods := j.Objects()
	for _, p := range pods {
		cur, err := api.Client.CoreV1().Pods("ml").Get(ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		if cur.Annotations[gang.PlanAnnotation] == "" || cur.Annotations[gang.ReadyAnnotation] != cur.Annotations[gang.PlanAnnotation] {
			t.Errorf("pod %s bound without the extender's plan installed by the operator (plan %q, ready %q)", p.Name,
				cur.Annotations[gang.PlanAnnotation], cur.Annotations[gang.ReadyAnnotation])
		}
	}
	jobs, err := sc.Client.Jobs(ctx)
	kubetest.Fatal(t, err)
	if len(jobs) != 1 || jobs[0].Owner != operator.Name {
		t.Fatalf("switch controller jobs %+v, want the gang's, owned by %s", jobs, operator.Name)
	}
	for _, p := range pods[1:] { // the kubelet's part
		kubetest.Fatal(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := api.Client.CoreV1().Pods("ml").Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = v1.PodSucceeded
			_, err = api.Client.CoreV1().Pods("ml").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		}))
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		jobs, err := sc.Client.Jobs(ctx)
		if err != nil || len(jobs) > 0 {
			last = fmt.Sprintf("controller jobs %d (%v)", len(jobs), err)
			return false, nil
		}
		for _, p := range pods {
			cur, err := api.Client.CoreV1().Pods("ml").Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if slices.Contains(cur.Finalizers, gang.Finalizer) {
				last = "pod " + p.Name + " keeps the finalizer"
				return false, nil
			}
			if cur.Labels[gang.RoleLabel] == gang.RolePS && cur.DeletionTimestamp == nil {
				last = "the PS is not deleted"
				return false, nil
			}
		}
		return true, nil
	})
	lines, forbidden := capture.report()
	if err != nil {
		t.Fatalf("the gang did not finish: %v; last: %s; forbidden in the logs: %q", err, last, forbidden)
	}
	if len(forbidden) > 0 {
		t.Errorf("%d log lines say forbidden, e.g. %q", len(forbidden), forbidden[0])
	} else {
		t.Logf("gang finished with the extender as its ServiceAccount; %d log lines, none forbidden", lines)
	}
	if lines == 0 {
		t.Error("no log line captured: the check for forbidden cannot fail")
	}
}
