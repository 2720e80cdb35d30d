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
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

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
// KubeSchedulerConfiguration, its own leader election on its Lease and all) runs as the ina-kube-scheduler
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

	c := deployed(t)
	api, sc := c.api, c.sc
	// Both with leader election as shipped: the scheduler on its own Lease (kube-scheduler's
	// elector; StartElectedScheduler stops instead of exiting the process), the operator on its.
	s := kubetest.StartElectedScheduler(ctx, t, c.schedulerConfig(t, api.KubeconfigAs(t, "inapack-system", "ina-kube-scheduler"), 0),
		app.WithPlugin(plugin.Name, plugin.New))
	o := c.startOperator(t, api.As("inapack-system", "ina-operator"), 0, &lg)
	select {
	case <-s.Leading():
	case <-time.After(60 * time.Second):
		t.Fatal("the scheduler does not lead within 60s (its Lease)")
	}
	defer o.Stop()

	schedCS := kubernetes.NewForConfigOrDie(api.As("inapack-system", "ina-kube-scheduler"))
	if _, err := schedCS.CoordinationV1().Leases("inapack-system").Get(ctx, operator.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler's account read the operator's lease (err %v)", err)
	}
	opCS := kubernetes.NewForConfigOrDie(api.As("inapack-system", "ina-operator"))
	if _, err := opCS.CoreV1().Secrets("inapack-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's account listed Secrets (err %v): the API server does not judge it by RBAC", err)
	}

	j := kubetest.Job{Namespace: "ml", Name: "mlp", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	bound, err := kubetest.WaitBound(ctx, api.Client, j, 90*time.Second)
	if err != nil {
		_, f := capture.report()
		t.Fatalf("%v; forbidden in the logs: %q", err, f)
	}
	t.Logf("gang bound: %v", bound)
	if h := c.leaseHolder("ina-kube-scheduler"); h != s.Identity {
		t.Errorf("Lease ina-kube-scheduler held by %q, want the scheduler %q", h, s.Identity)
	}
	if h := c.leaseHolder(operator.Name); h == "" {
		t.Errorf("Lease %s held by no one", operator.Name)
	}
	// Both components' conditions reach the PodGroup as their accounts.
	c.waitFor(t, "the PodGroup's conditions", 20*time.Second, func() (bool, string) {
		pg, err := api.Client.SchedulingV1beta1().PodGroups("ml").Get(ctx, "mlp", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, typ := range []string{gang.PlannedCondition, gang.SwitchJobInstalledCondition} {
			if !meta.IsStatusConditionTrue(pg.Status.Conditions, typ) {
				return false, fmt.Sprintf("%s not True: %+v", typ, pg.Status.Conditions)
			}
		}
		return true, ""
	})
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
