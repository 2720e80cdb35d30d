package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/internal/kueuetest"
)

// The Kueue gang's queues are deploy/kueue's (a Topology of racks and hosts, a ClusterQueue of 4
// GPUs, the LocalQueue "training" in the users' namespace).
const (
	kueueQueues = root + "/deploy/kueue/queues.yaml"
	kueueNS     = "ml-demo"
	hostLabel   = "kubernetes.io/hostname"
)

// prepareKueue builds Kueue's manager before the demo's clock starts (a first build takes
// minutes; kueuetest keeps it in the user's cache).
func prepareKueue(t *testing.T) {
	t.Helper()
	if _, built, err := kueuetest.Binary(); err != nil {
		t.Fatal(err)
	} else if built > 0 {
		fmt.Printf("k8s-demo: built Kueue %s's manager in %v (once; kept in the user's cache)\n", kueuetest.Version, built.Round(time.Second))
	}
}

// kueueGang runs the demo's Kueue wave on the empty cluster: Kueue's own manager in front of
// NetPack with deploy/kueue's queues, and one gang, j10 (four 1-GPU workers asking Kueue for one
// rack), submitted as a Kueue pod group through the LocalQueue. Kueue admits it and pins each
// worker to a host of its topology assignment (two to a host); NetPack places the gang inside
// that, each worker on its own host, the PS where no two of them are; the workers all-reduce
// through the switches. Afterwards nothing of it may be left: no pod, no finalizer, no switch job,
// and its Workload finished.
func kueueGang(ctx context.Context, t *testing.T, kapi *kubetest.API, ctl *api.Client, logs string) row {
	t.Helper()
	k := kueuetest.Start(ctx, t, kapi)
	// The kubelet's host name label (the Topology's lowest level) and GPU feature discovery's
	// label (the ResourceFlavor's nodeLabels).
	nodes, err := kapi.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	kubetest.Fatal(t, err)
	for _, n := range nodes.Items {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,"nvidia.com/gpu.present":"true"}}}`, hostLabel, n.Name)
		_, err := kapi.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		kubetest.Fatal(t, err)
	}
	_, err = kapi.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNS}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	kueuetest.Apply(ctx, t, kapi, kueueQueues)

	g := gangJob{Job: kubetest.Job{Namespace: kueueNS, Name: "j10", Workers: 4, GPUsPerWorker: 1, Model: "resnet50",
		SchedulerName: "inapack-scheduler"}, iters: 40, values: 8192, compute: 5 * time.Millisecond}
	g.commands(701)
	submitted := time.Now()
	for _, p := range kueuetest.Queued(g.Job, "training", "", map[string]string{kueuetest.PreferredTopology: gang.RackLabel}) {
		_, err := kapi.Client.CoreV1().Pods(kueueNS).Create(ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
	placed, err := kubetest.WaitBound(ctx, kapi.Client, g.Job, 2*time.Minute)
	kubetest.Fatal(t, err)
	r := row{job: g, submitted: submitted, via: "Kueue"}
	r.workers, r.ps = kubetest.Placed(g.Job, placed)

	// Inside Kueue's assignment: every worker on the host its node selector names.
	hosts := map[string]int{}
	_, pods := g.Objects()
	for _, p := range pods {
		cur, err := kapi.Client.CoreV1().Pods(kueueNS).Get(ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		if cur.Labels[gang.RoleLabel] == gang.RolePS {
			continue
		}
		host, ok := cur.Spec.NodeSelector[hostLabel]
		if !ok || cur.Spec.NodeName != host {
			t.Errorf("worker %s on %s; Kueue's assignment (its node selector) %v", p.Name, cur.Spec.NodeName, cur.Spec.NodeSelector)
		}
		hosts[host]++
	}
	var kv []string
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		kv = append(kv, fmt.Sprintf("%sx%d", h, hosts[h]))
	}
	r.note = "ClusterQueue training, hosts " + strings.Join(kv, ",")
	if *demo {
		traceGang(ctx, t, kapi, ctl, g.Job)
	}
	r.finish(ctx, t, kapi, logs)
	kueueGone(ctx, t, kapi, k, ctl, g.Job)
	return r
}

// kueueGone waits until nothing of the Kueue gang is left: its pods gone or succeeded, none held
// by a finalizer (the operator's or Kueue's), no job on the switch controller, and its Workload
// finished (Kueue lifts its finalizers once every pod of a group that is one run has ended).
func kueueGone(ctx context.Context, t *testing.T, kapi *kubetest.API, k *kueuetest.Kueue, ctl *api.Client, j kubetest.Job) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := kapi.Client.CoreV1().Pods(kueueNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var live []string
		for _, p := range pods.Items {
			if p.Status.Phase != v1.PodSucceeded || len(p.Finalizers) > 0 {
				live = append(live, fmt.Sprintf("%s (%s, finalizers %v)", p.Name, p.Status.Phase, p.Finalizers))
			}
		}
		js, err := ctl.Jobs(ctx)
		if err != nil {
			return false, nil
		}
		wl, err := k.Client.Resource(kueuetest.WorkloadResource).Namespace(kueueNS).Get(ctx, j.Name, metav1.GetOptions{})
		finished := apierrors.IsNotFound(err)
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
			for _, c := range conds {
				m := c.(map[string]any)
				finished = finished || (m["type"] == "Finished" && m["status"] == "True")
			}
		}
		last = fmt.Sprintf("pods %v, %d jobs on the controller, Workload finished %v", live, len(js), finished)
		return len(live) == 0 && len(js) == 0 && finished, nil
	})
	if err != nil {
		t.Errorf("left behind after the Kueue gang ended: %s", last)
	}
}
