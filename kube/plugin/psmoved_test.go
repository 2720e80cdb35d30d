package plugin_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/plugin"
)

// TestPSMovedEvent: with a baseline policy (min-frag: best-fit machines, the PS on the largest
// worker; NetPack's own placer is told a node may hold one pod of the gang beside its PS, the
// baselines are not), a gang of four 1-GPU worker pods on 2-GPU nodes gets its PS on a node with
// two of them, where only one could reach it; the plan moves the PS to a node with at most one
// of the gang's workers, the PS is bound there, and a Warning event NetPackPSMoved on the PS pod
// names both nodes.
func TestPSMovedEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	prof := kubetest.NetPackProfile("policy: min-frag", "uplinkGbps: 0.02", "inaMemoryBytes: 16384", "rtt: 1ms", "permitTimeout: 10s", "waitForOperator: false")
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(api, prof, ""), app.WithPlugin(plugin.Name, plugin.New))
	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))

	j := kubetest.Job{Namespace: "default", Name: "moved", Workers: 4, GPUsPerWorker: 1, Model: "resnet50", PodGroup: true, SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	bound, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	workersOn := map[string]int{}
	for name, n := range bound {
		if name != "moved-ps" {
			workersOn[n]++
		}
	}
	psNode := bound["moved-ps"]
	t.Logf("the PS bound to %s; workers by node %v", psNode, workersOn)
	if workersOn[psNode] > 1 {
		t.Errorf("PS bound to %s with %d of the gang's workers; only one could reach it there", psNode, workersOn[psNode])
	}
	if got := pod(ctx, t, api.Client, "moved-ps").Annotations[gang.PSNodeAnnotation]; got != psNode {
		t.Errorf("the plan's %s is %q, the PS is bound to %s", gang.PSNodeAnnotation, got, psNode)
	}
	re := regexp.MustCompile(`PS on node (\S+), not (\S+):`)
	var seen []string
	from := ""
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
			if m := re.FindStringSubmatch(e.Note); e.Reason == "NetPackPSMoved" && e.Type == v1.EventTypeWarning && m != nil && m[1] == psNode {
				from = m[2]
				t.Logf("event: %s", e.Note)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Warning event NetPackPSMoved on moved-ps saying \"PS on node %s, not ...\"; its events: %q", psNode, seen)
	}
	if workersOn[from] < 2 {
		t.Errorf("the event says the PS moved off %s, which holds %d of the gang's workers (want several)", from, workersOn[from])
	}
}
