package deploy_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
)

// logCapture keeps the log lines that say a request was forbidden, from every logger of the
// process (klog's, which kube-scheduler and client-go use, and the operator's).
type logCapture struct {
	mu        sync.Mutex
	forbidden []string
	lines     int
}

var forbiddenRE = regexp.MustCompile(`(?i)forbidden|cannot (get|list|watch|create|update|patch|delete) resource`)

func (c *logCapture) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.lines++
		if forbiddenRE.MatchString(args) {
			c.forbidden = append(c.forbidden, prefix+" "+args)
		}
	}, funcr.Options{})
}

func (c *logCapture) report() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines, slices.Clone(c.forbidden)
}

// TestRBACFinishesAGang: deploy/'s manifests applied as shipped to an API server with the RBAC
// authorizer on; ina-kube-scheduler (kube-scheduler with NetPack, configured by the shipped
// KubeSchedulerConfiguration, leader election and all) runs as the ina-kube-scheduler
// ServiceAccount and the operator as ina-operator (the admin impersonates each account, so RBAC
// judges every request as theirs). A gang is placed, installed on the switch controller, bound;
// when its workers succeed the job leaves the controller, the PS is deleted and every finalizer
// is lifted; no log line of either says forbidden. The accounts are really limited: the
// operator's may not read Secrets.
func TestRBACFinishesAGang(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capture := &logCapture{}
	lg := capture.logger()
	klog.SetLogger(lg)
	t.Cleanup(klog.ClearLogger)

	api := kubetest.StartAPI(t)
	// The scheduler reads the gang forms' objects where their CRDs are installed (gang/forms.go),
	// as its account: its start fails if that may not list and watch them.
	kubetest.InstallCRDs(t, api, kubetest.CoschedulingCRD, kubetest.JobSetCRD)
	dyn, err := dynamic.NewForConfig(api.Config)
	kubetest.Fatal(t, err)
	a := dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(api.Client.Discovery())), commit: true}
	objs := render(t, "../../deploy")
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

	// The scheduler with the shipped configuration, its client the ServiceAccount's.
	var schedCfg map[string]any
	schedCM := find(objs, "ConfigMap", "ina-kube-scheduler-config")
	if schedCM == nil {
		t.Fatal("deploy/ renders no ConfigMap ina-kube-scheduler-config*")
	}
	for _, v := range schedCM.Object["data"].(map[string]any) {
		kubetest.Fatal(t, yaml.Unmarshal([]byte(v.(string)), &schedCfg))
	}
	// kube-scheduler exits the process when it stops leading, so in a test it runs without leader
	// election; its account's Lease rights are checked by hand below, on the shipped lease.
	le, _ := schedCfg["leaderElection"].(map[string]any)
	leaseNS, _ := le["resourceNamespace"].(string)
	leaseName, _ := le["resourceName"].(string)
	schedCfg["leaderElection"] = map[string]any{"leaderElect": false}
	schedCfg["clientConnection"] = map[string]any{"kubeconfig": api.KubeconfigAs(t, "inapack-system", "ina-kube-scheduler"), "qps": 200, "burst": 400}
	b, err := yaml.Marshal(schedCfg)
	kubetest.Fatal(t, err)
	kubetest.StartScheduler(ctx, t, string(b), app.WithPlugin(plugin.Name, plugin.New))

	o, err := operator.Start(ctx, api.As("inapack-system", "ina-operator"), operator.Config{Controller: sc.Client,
		Topology: types.NamespacedName{Namespace: "inapack-system", Name: "inapack-topology"}, LeaderElection: true,
		LeaderElectionNamespace: "inapack-system", SyncInterval: time.Second, MaxRetryDelay: time.Second, Logger: &lg})
	kubetest.Fatal(t, err)
	defer o.Stop()

	schedCS := kubernetes.NewForConfigOrDie(api.As("inapack-system", "ina-kube-scheduler"))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNS, Name: leaseName}}
	if lease, err = schedCS.CoordinationV1().Leases(leaseNS).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Errorf("the scheduler's account cannot create its lease %s/%s: %v", leaseNS, leaseName, err)
	} else if _, err = schedCS.CoordinationV1().Leases(leaseNS).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the scheduler's account cannot renew its lease %s/%s: %v", leaseNS, leaseName, err)
	}
	if _, err := schedCS.CoordinationV1().Leases(leaseNS).Get(ctx, operator.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler's account read the operator's lease (err %v)", err)
	}
	opCS := kubernetes.NewForConfigOrDie(api.As("inapack-system", "ina-operator"))
	if _, err := opCS.CoreV1().Secrets("inapack-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's account listed Secrets (err %v): the API server does not judge it by RBAC", err)
	}

	_, err = api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	bound, err := kubetest.WaitBound(ctx, api.Client, j, 90*time.Second)
	if err != nil {
		_, f := capture.report()
		t.Fatalf("%v; forbidden in the logs: %q", err, f)
	}
	t.Logf("gang bound: %v", bound)
	jobs, err := sc.Client.Jobs(ctx)
	kubetest.Fatal(t, err)
	if len(jobs) != 1 || jobs[0].Owner != operator.Name {
		t.Fatalf("switch controller jobs %+v, want the gang's, owned by %s", jobs, operator.Name)
	}
	_, pods := j.Objects()
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
		t.Logf("gang finished as the ServiceAccounts; %d log lines, none forbidden", lines)
	}
	if lines == 0 {
		t.Error("no log line captured: the check for forbidden cannot fail")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
