package plugin_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/plugin"
)

const twoRacks = "../../bmv2/topologies/two-racks/topology.json"

// profile is the scheduler profile under test: NetPack's model of the two-racks topology as the
// scheduler service builds it (uplink 20 Mbit/s, 64 slots of 256 B, 1 ms hold).
var profile = kubetest.NetPackProfile("uplinkGbps: 0.02", "inaMemoryBytes: 16384", "rtt: 1ms", "permitTimeout: 10s",
	"waitForOperator: false")

func start(t *testing.T) (context.Context, *kubetest.API, *topology.Topology) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(api, profile, ""), app.WithPlugin(plugin.Name, plugin.New))
	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))
	return ctx, api, topo
}

// TestGangsPlacedAsTheService: gangs (PodGroups, and label gangs) are bound all at once, each pod
// on the node of NetPack's plan, and the plans equal the scheduler service's for the same
// sequence of jobs.
func TestGangsPlacedAsTheService(t *testing.T) {
	ctx, api, topo := start(t)
	svc, err := kubetest.NewService(topo)
	kubetest.Fatal(t, err)
	jobs := []kubetest.Job{
		{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true},
		{Name: "b", Workers: 1, GPUsPerWorker: 2, Model: "resnet50", PodGroup: false},
		{Name: "c", Workers: 2, GPUsPerWorker: 2, Model: "bert-base", PodGroup: true},
	}
	for _, j := range jobs {
		j.Namespace, j.SchedulerName = "default", "inapack-scheduler"
		kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
		nodes, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
		kubetest.Fatal(t, err)
		gotW, gotPS := kubetest.Placed(j, nodes)
		wantW, wantPS, err := svc.Place(j)
		kubetest.Fatal(t, err)
		t.Logf("gang %s: workers %v ps %s (service: %v ps %s)", j.Name, gotW, gotPS, wantW, wantPS)
		if !slices.Equal(gotW, wantW) || gotPS != wantPS {
			t.Errorf("gang %s placed on workers %v ps %s; the scheduler service places it on %v ps %s", j.Name, gotW, gotPS, wantW, wantPS)
		}
	}
}

// TestGangTooLargeStaysPending: a gang larger than the cluster binds no pod, and its pods say why.
func TestGangTooLargeStaysPending(t *testing.T) {
	ctx, api, _ := start(t)
	j := kubetest.Job{Namespace: "default", Name: "huge", Workers: 6, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true,
		SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	why, err := kubetest.WaitPending(ctx, api.Client, j, "12 GPUs", 20*time.Second)
	kubetest.Fatal(t, err)
	t.Logf("pending because: %s", why)
	kubetest.NoneBound(ctx, t, api.Client, j)
}

// TestUnlabelledNodesINAOff: a gang placed on nodes without a rack label gets INA off in its plan
// and an event on its PS pod that says why.
func TestUnlabelledNodesINAOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	api := kubetest.StartAPI(t)
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(api, profile, ""), app.WithPlugin(plugin.Name, plugin.New))
	var nodes []*v1.Node
	for _, n := range []string{"n1", "n2"} {
		nodes = append(nodes, kubetest.Node(n, 2, nil, nil))
	}
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, api.Client, nodes))
	j := kubetest.Job{Namespace: "default", Name: "bare", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true,
		SchedulerName: "inapack-scheduler"}
	kubetest.Fatal(t, kubetest.Submit(ctx, api.Client, j))
	_, err := kubetest.WaitBound(ctx, api.Client, j, 30*time.Second)
	kubetest.Fatal(t, err)
	ps, err := api.Client.CoreV1().Pods("default").Get(ctx, "bare-ps", metav1.GetOptions{})
	kubetest.Fatal(t, err)
	if got := ps.Annotations["inapack.io/ina"]; got != "false" {
		t.Errorf("plan of a gang on unlabelled nodes: inapack.io/ina=%q, want false", got)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := api.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "NetPackINAOff" && e.Regarding.Name == "bare-ps" {
				t.Logf("event: %s", e.Note)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no NetPackINAOff event on bare-ps: %v", err)
	}
}
