package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// TestPSMovedEvent: NetPack puts the PS of a gang of four 1-GPU worker pods on a 2-GPU node that
// holds two of them, where only one could reach it; the plan moves the PS to a node with at most
// one of the gang's workers, the PS is bound there, and a Warning event NetPackPSMoved on the PS
// pod names both nodes.
func TestPSMovedEvent(t *testing.T) {
	ctx, api, topo := start(t)
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)
	j := kubetest.Job{Namespace: "default", Name: "moved", Workers: 4, GPUsPerWorker: 1, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	_, netpackPS, err := svc.Place(kubetest.Job{Namespace: "default", Name: "moved", Workers: 1, GPUsPerWorker: 4, Model: "resnet50"})
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	nodes, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	workersOn := map[string]int{}
	for name, n := range nodes {
		if name != "moved-ps" {
			workersOn[n]++
		}
	}
	psNode := nodes["moved-ps"]
	t.Logf("NetPack's PS node %s (workers of the gang there: %d); the PS bound to %s (%d); workers by node %v",
		netpackPS, workersOn[netpackPS], psNode, workersOn[psNode], workersOn)
	if workersOn[netpackPS] < 2 {
		t.Fatalf("the case needs NetPack's PS node %s to hold several of the gang's workers; it holds %d", netpackPS, workersOn[netpackPS])
	}
	if psNode == netpackPS || workersOn[psNode] > 1 {
		t.Errorf("PS bound to %s with %d of the gang's workers; want it moved off %s to a node with at most one", psNode, workersOn[psNode], netpackPS)
	}
	if got := pod(ctx, t, api.Client, "moved-ps").Annotations[gang.PSNodeAnnotation]; got != psNode {
		t.Errorf("the plan's %s is %q, the PS is bound to %s", gang.PSNodeAnnotation, got, psNode)
	}
	want := fmt.Sprintf("PS on node %s, not %s", psNode, netpackPS)
	var seen []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := api.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.Regarding.Name != "moved-ps" {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == "NetPackPSMoved" && e.Type == v1.EventTypeWarning && strings.Contains(e.Note, want) {
				t.Logf("event: %s", e.Note)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Warning event NetPackPSMoved on moved-ps saying %q; its events: %q", want, seen)
	}
}
