package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/p4src/model"
)

const twoRacks = "../../bmv2/topologies/two-racks/topology.json"

// env is a live control plane for the operator: kube-apiserver on etcd, the topology ConfigMap and
// Node objects, and the real switch controller (its job API, with a token) driving in-process
// reference switches, one per switch of the two-racks topology. No scheduler runs: the tests
// write a gang's plan as the plugin's PreBind does, from the same gang code, and bind its pods
// once Ready, as the plugin does.
type env struct {
	ctx      context.Context
	api      *kubetest.API
	topo     *topology.Topology
	nodes    []*v1.Node
	switches map[string]*model.Switch
	sc       *kubetest.SwitchController
	client   *api.Client
	cfg      operator.Config
}

const token = "operator-test-token"

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{ctx: ctx, api: kubetest.StartAPI(t)}
	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	e.topo = topo
	e.sc = kubetest.StartSwitchController(ctx, t, topo, token)
	e.switches, e.client = e.sc.Switches, e.sc.Client

	cs := e.api.Client
	raw, err := os.ReadFile(twoRacks)
	kubetest.Fatal(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inapack-system"}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	_, err = cs.CoreV1().ConfigMaps("inapack-system").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "topology"},
		Data: map[string]string{"topology.json": string(raw)}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	e.nodes, err = kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, cs, e.nodes))
	// Sync often, and retry after at most a second, so the tests of both need no long waits.
	e.cfg = operator.Config{Controller: e.client, Topology: types.NamespacedName{Namespace: "inapack-system", Name: "topology"},
		SyncInterval: 200 * time.Millisecond, MaxRetryDelay: time.Second}
	return e
}

// start starts an operator on the API server as it is now (after a restart, its new address).
func (e *env) start(t *testing.T) *operator.Operator {
	t.Helper()
	o, err := operator.Start(e.ctx, e.api.Config, e.cfg)
	kubetest.Fatal(t, err)
	t.Cleanup(func() { _ = o.Stop() })
	return o
}

func (e *env) cs() kubernetes.Interface { return e.api.Client }

// gangCfg is NetPack's model of the two-racks topology as the plugin's tests configure it.
var gangCfg = gang.Config{UplinkGbps: 0.02, INAMemoryBytes: 16384, RTT: time.Millisecond}

// submit creates j's pods and writes their plan as the plugin does: NetPack's placement of the
// gang on the nodes, with the pods already bound counting as running gangs.
func (e *env) submit(t *testing.T, j kubetest.Job) *gang.Plan {
	t.Helper()
	j.Namespace, j.SchedulerName = "default", "nobody" // no scheduler binds them: the test does
	kubetest.Fatal(t, kubetest.Submit(e.ctx, e.cs(), j))
	all, err := e.cs().CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{})
	kubetest.Fatal(t, err)
	var pods, assigned []*v1.Pod
	for i := range all.Items {
		p := &all.Items[i]
		pods = append(pods, p)
		if p.Spec.NodeName != "" {
			assigned = append(assigned, p)
		}
	}
	key := gang.Key{Namespace: "default", Name: j.Name, ByLabel: !j.PodGroup}
	g, err := gang.Collect(key, pods, 0)
	kubetest.Fatal(t, err)
	v, err := gang.NewView(gangCfg, e.nodes, assigned)
	kubetest.Fatal(t, err)
	pl, err := v.Place(gangCfg, g, fmt.Sprintf("%s#%d", key, time.Now().UnixNano()))
	kubetest.Fatal(t, err)
	for _, p := range g.Pods() {
		kubetest.Fatal(t, gang.Annotate(e.ctx, e.cs(), p, pl.Annotations(p)))
	}
	t.Logf("gang %s planned: %s (plan %s)", j.Name, pl, pl.ID)
	return pl
}

// pods are the current pods of a plan's gang (by name), PS first.
func (e *env) pods(t *testing.T, j string) []*v1.Pod {
	t.Helper()
	all, err := e.cs().CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{})
	kubetest.Fatal(t, err)
	var out []*v1.Pod
	for i := range all.Items {
		p := &all.Items[i]
		if k, ok := gang.KeyOf(p); ok && k.Name == j {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		if (a.Labels[gang.RoleLabel] == gang.RolePS) != (b.Labels[gang.RoleLabel] == gang.RolePS) {
			if a.Labels[gang.RoleLabel] == gang.RolePS {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// waitFor polls cond (every 50 ms, at most 30 s: the bound is for a broken run, not a speed).
func (e *env) waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// waitReady waits for the operator to have installed the plan on every pod, then binds the pods
// to their planned nodes (the plugin's bind).
func (e *env) waitReady(t *testing.T, j string, pl *gang.Plan) []*v1.Pod {
	t.Helper()
	var pods []*v1.Pod
	e.waitFor(t, "gang "+j+" Ready", func() (bool, string) {
		pods = e.pods(t, j)
		for _, p := range pods {
			if p.Annotations[gang.ReadyAnnotation] != pl.ID {
				return false, fmt.Sprintf("pod %s: ready %q", p.Name, p.Annotations[gang.ReadyAnnotation])
			}
		}
		return true, ""
	})
	for _, p := range pods {
		b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID},
			Target: v1.ObjectReference{Kind: "Node", Name: p.Annotations[gang.NodeAnnotation]}}
		kubetest.Fatal(t, e.cs().CoreV1().Pods("default").Bind(e.ctx, b, metav1.CreateOptions{}))
	}
	return e.pods(t, j)
}

// setPhase reports a pod's phase as its kubelet would (exit code 0 for Succeeded, 1 for Failed).
func (e *env) setPhase(t *testing.T, p *v1.Pod, phase v1.PodPhase) {
	t.Helper()
	cur, err := e.cs().CoreV1().Pods(p.Namespace).Get(e.ctx, p.Name, metav1.GetOptions{})
	kubetest.Fatal(t, err)
	code := int32(0)
	if phase == v1.PodFailed {
		code = 1
	}
	cur.Status.Phase = phase
	cur.Status.ContainerStatuses = []v1.ContainerStatus{{Name: cur.Spec.Containers[0].Name,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: "Test"}}}}
	_, err = e.cs().CoreV1().Pods(p.Namespace).UpdateStatus(e.ctx, cur, metav1.UpdateOptions{})
	kubetest.Fatal(t, err)
}

// switchJobs are the controller's job ids.
func (e *env) switchJobs(t *testing.T) []int {
	t.Helper()
	js, err := e.client.Jobs(e.ctx)
	kubetest.Fatal(t, err)
	var ids []int
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids
}

// onSwitches lists the switches holding job id's PS entry (what the controller wrote through
// P4Runtime, read back from the switches' own tables).
func (e *env) onSwitches(id int) []string {
	var out []string
	for name, sw := range e.switches {
		if _, ok := sw.PS(uint16(id)); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// slotsHeld counts the aggregator slots job id holds on any switch.
func (e *env) slotsHeld(id int) int {
	n := 0
	for _, sw := range e.switches {
		for i := range 64 {
			if s := sw.Slot(i); s.Job == uint16(id) && s.Count > 0 {
				n++
			}
		}
	}
	return n
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: not a number", s)
	}
	return n
}

// cpJob is a switch controller job, as its API lists them.
type cpJob = cp.JobConfig

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
