package kueue_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/internal/kueuetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
	"github.com/inapack/inapack/p4src/model"
)

const (
	twoRacks = "../../bmv2/topologies/two-racks/topology.json"
	sample   = "../../deploy/kueue" // the platform team's queues and the sample job "mlp"
	ns       = "ml-demo"            // the sample's namespace, with its LocalQueue "training"
	hostname = "kubernetes.io/hostname"
)

// env is a live cluster with Kueue in front of NetPack: kube-apiserver on etcd, Kueue's
// controller manager and webhooks, ina-kube-scheduler, the operator, and the real switch
// controller driving in-process reference switches (one per switch of the two-racks topology).
type env struct {
	ctx      context.Context
	api      *kubetest.API
	kueue    *kueuetest.Kueue
	ctl      *api.Client
	switches map[string]*model.Switch
}

func start(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{ctx: ctx, api: kubetest.StartAPI(t)}
	e.kueue = kueuetest.Start(ctx, t, e.api)
	kueuetest.Kubelet(ctx, e.api.Client)

	topo, err := topology.Load(twoRacks)
	kubetest.Fatal(t, err)
	sc := kubetest.StartSwitchController(ctx, t, topo, "kueue-test-token")
	e.switches, e.ctl = sc.Switches, sc.Client

	cs := e.api.Client
	raw, err := os.ReadFile(twoRacks)
	kubetest.Fatal(t, err)
	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "topology"},
		Data: map[string]string{"topology.json": string(raw)}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	op, err := operator.Start(ctx, e.api.Config, operator.Config{Controller: e.ctl,
		Topology: types.NamespacedName{Namespace: "default", Name: "topology"}})
	kubetest.Fatal(t, err)
	t.Cleanup(func() { _ = op.Stop() })
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(e.api, kubetest.NetPackProfile("uplinkGbps: 0.02",
		"inaMemoryBytes: 16384", "rtt: 1ms", "permitTimeout: 10s", "readyTimeout: 20s"), ""),
		app.WithPlugin(plugin.Name, plugin.New))

	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	for _, n := range nodes {
		n.Labels[hostname] = n.Name                 // the kubelet's label; Kueue's Topology names hosts by it
		n.Labels["nvidia.com/gpu.present"] = "true" // GPU feature discovery's: the sample flavor's
	}
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, cs, nodes))
	return e
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// submit creates j's pods as a Kueue pod group in the sample's LocalQueue.
func (e *env) submit(t *testing.T, j kubetest.Job, priority string) {
	t.Helper()
	for _, p := range kueuetest.Queued(j, "training", priority, map[string]string{kueuetest.PreferredTopology: gang.RackLabel}) {
		_, err := e.api.Client.CoreV1().Pods(j.Namespace).Create(e.ctx, p, metav1.CreateOptions{})
		kubetest.Fatal(t, err)
	}
}

// waitFor polls cond (every 100 ms, at most a minute: the bound is for a broken run).
func (e *env) waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// workload is what the test reads of the Workload of pod group name (Kueue names it after the
// group): its conditions, and how many of its pod sets have a topology assignment.
type workload struct {
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
		Admission  *struct {
			PodSetAssignments []struct {
				TopologyAssignment *topologyAssignment `json:"topologyAssignment"`
			} `json:"podSetAssignments"`
		} `json:"admission"`
	} `json:"status"`
}

// topologyAssignment is Kueue's (v1beta2, apis/kueue/v1beta2 TopologyAssignment): the domains of
// the lowest level in slices, each with its pod count, values and counts given per domain
// (individual) or once for the slice (universal).
type topologyAssignment struct {
	Levels []string `json:"levels"`
	Slices []struct {
		DomainCount    int `json:"domainCount"`
		ValuesPerLevel []struct {
			Universal  *string `json:"universal"`
			Individual *struct {
				Prefix *string  `json:"prefix"`
				Suffix *string  `json:"suffix"`
				Roots  []string `json:"roots"`
			} `json:"individual"`
		} `json:"valuesPerLevel"`
		PodCounts struct {
			Universal  *int  `json:"universal"`
			Individual []int `json:"individual"`
		} `json:"podCounts"`
	} `json:"slices"`
}

// hosts are the pods per host of a (its lowest level must be the host's).
func (a *topologyAssignment) hosts() (map[string]int, error) {
	if len(a.Levels) == 0 || a.Levels[len(a.Levels)-1] != hostname {
		return nil, fmt.Errorf("topology assignment of levels %v: want %s lowest", a.Levels, hostname)
	}
	out := map[string]int{}
	for _, sl := range a.Slices {
		lv := sl.ValuesPerLevel[len(sl.ValuesPerLevel)-1]
		for d := range sl.DomainCount {
			host := ""
			switch {
			case lv.Universal != nil:
				host = *lv.Universal
			case lv.Individual != nil && d < len(lv.Individual.Roots):
				deref := func(s *string) string {
					if s == nil {
						return ""
					}
					return *s
				}
				host = deref(lv.Individual.Prefix) + lv.Individual.Roots[d] + deref(lv.Individual.Suffix)
			default:
				return nil, fmt.Errorf("topology assignment slice without a value for domain %d", d)
			}
			n := 0
			switch {
			case sl.PodCounts.Universal != nil:
				n = *sl.PodCounts.Universal
			case d < len(sl.PodCounts.Individual):
				n = sl.PodCounts.Individual[d]
			}
			out[host] += n
		}
	}
	return out, nil
}

func (e *env) workload(name string) (*workload, error) {
	u, err := e.kueue.Client.Resource(kueuetest.WorkloadResource).Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	wl := &workload{}
	return wl, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, wl)
}

func (wl *workload) condition(typ string) *metav1.Condition {
	return meta.FindStatusCondition(wl.Status.Conditions, typ)
}

func (e *env) pods(t *testing.T, j kubetest.Job) []*v1.Pod {
	t.Helper()
	_, want := j.Objects()
	var out []*v1.Pod
	for _, p := range want {
		cur, err := e.api.Client.CoreV1().Pods(ns).Get(e.ctx, p.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		out = append(out, cur)
	}
	return out
}

// placedInside checks every pod of j is bound inside Kueue's assignment: each worker on the host
// its node selector names (the selector Kueue's topology ungater wrote), and as many workers on
// each host as the Workload's topology assignment says. The PS asks Kueue for no GPUs, so Kueue
// assigns it no domain and NetPack puts it where its placement wants.
func (e *env) placedInside(t *testing.T, j kubetest.Job) (workers []string, ps string) {
	t.Helper()
	got := map[string]int{}
	for _, p := range e.pods(t, j) {
		if len(p.Spec.SchedulingGates) > 0 {
			t.Errorf("pod %s bound with scheduling gates %v", p.Name, p.Spec.SchedulingGates)
		}
		if p.Labels[gang.RoleLabel] == gang.RolePS {
			ps = p.Spec.NodeName
			continue
		}
		workers = append(workers, p.Spec.NodeName)
		got[p.Spec.NodeName]++
		host, ok := p.Spec.NodeSelector[hostname]
		if !ok {
			t.Errorf("worker %s: no %s node selector from Kueue's topology assignment (selectors %v)", p.Name, hostname, p.Spec.NodeSelector)
			continue
		}
		if p.Spec.NodeName != host {
			t.Errorf("worker %s bound on %s, outside Kueue's topology assignment (node selector %v)", p.Name, p.Spec.NodeName, p.Spec.NodeSelector)
		}
	}
	slices.Sort(workers)
	wl, err := e.workload(j.Name)
	kubetest.Fatal(t, err)
	if c := wl.condition("Admitted"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Workload %s bound but not Admitted: %v", j.Name, wl.Status.Conditions)
	}
	if wl.Status.Admission == nil {
		t.Fatalf("Workload %s bound but has no admission", j.Name)
	}
	var want map[string]int
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment == nil {
			continue
		}
		if want != nil {
			t.Errorf("Workload %s: two pod sets with a topology assignment, want one (the workers)", j.Name)
		}
		want, err = psa.TopologyAssignment.hosts()
		kubetest.Fatal(t, err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("gang %s: workers per host %v; Kueue's topology assignment %v", j.Name, got, want)
	}
	// In one try: Kueue lifts a gang's gates one pod at a time, and a pod PreEnqueue held back
	// meanwhile must be brought back when the gang is planned, not when its planned pods give up
	// waiting for it at Permit.
	evs, err := e.api.Client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{})
	kubetest.Fatal(t, err)
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.InvolvedObject.Name, j.Name+"-") && ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "timeout") {
			t.Errorf("gang %s: pod %s: %s: %s", j.Name, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
	}
	return workers, ps
}

// clusterQueue is what Kueue's ClusterQueue "training" says of the GPUs: reserved by admitted
// workloads, its nominal quota, and how many workloads wait.
func (e *env) clusterQueue(t *testing.T) (reserved, nominal string, pending int64) {
	t.Helper()
	u, err := e.kueue.Client.Resource(kueuetest.ClusterQueueResource).Get(e.ctx, "training", metav1.GetOptions{})
	kubetest.Fatal(t, err)
	// gpus is the GPUs' field key of the first flavor listing them (flavorsReservation's total,
	// a resource group's nominalQuota).
	gpus := func(flavors []any, key string) string {
		for _, f := range flavors {
			rs, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
			for _, r := range rs {
				if m := r.(map[string]any); m["name"] == gang.GPUResource {
					return fmt.Sprint(m[key])
				}
			}
		}
		return ""
	}
	res, _, _ := unstructured.NestedSlice(u.Object, "status", "flavorsReservation")
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "resourceGroups")
	for _, g := range groups {
		fl, _, _ := unstructured.NestedSlice(g.(map[string]any), "flavors")
		nominal = cmp.Or(nominal, gpus(fl, "nominalQuota"))
	}
	pending, _, _ = unstructured.NestedInt64(u.Object, "status", "pendingWorkloads")
	return gpus(res, "total"), nominal, pending
}

// bound waits for every pod of j to be bound; if they are not, it fails t saying where Kueue
// sent each and why kube-scheduler left it.
func (e *env) bound(t *testing.T, j kubetest.Job) {
	t.Helper()
	if _, err := kubetest.WaitBound(e.ctx, e.api.Client, j, time.Minute); err != nil {
		for _, p := range e.pods(t, j) {
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled {
					why = c.Message
				}
			}
			t.Logf("pod %s: node %q, gates %v, node selector %v, PodScheduled: %s", p.Name, p.Spec.NodeName, p.Spec.SchedulingGates, p.Spec.NodeSelector, why)
		}
		t.Fatal(err)
	}
}

// switchJob is the switch job the operator installed for j (from its PS's wiring).
func (e *env) switchJob(t *testing.T, j kubetest.Job) int {
	t.Helper()
	ps := e.pods(t, j)[0]
	id, err := strconv.Atoi(ps.Annotations[gang.SwitchJobAnnotation])
	if err != nil {
		t.Fatalf("gang %s: switch job %q", j.Name, ps.Annotations[gang.SwitchJobAnnotation])
	}
	return id
}

// where is what the switches hold of a switch job: on the controller's job list, its entries
// in the reference switches' tables (ina_job, ina_ps) and the aggregator slots it holds (read
// back from the switches' own registers).
type where struct {
	listed         bool
	entries, slots int
}

func (e *env) onSwitches(t *testing.T, id int) where {
	t.Helper()
	var w where
	js, err := e.ctl.Jobs(e.ctx)
	kubetest.Fatal(t, err)
	for _, j := range js {
		w.listed = w.listed || j.ID == id
	}
	for _, sw := range e.switches {
		for k := range sw.Jobs() {
			w.entries += btoi(k.Job == uint16(id))
		}
		if _, ok := sw.PS(uint16(id)); ok {
			w.entries++
		}
		for i := range 64 {
			if s := sw.Slot(i); s.Job == uint16(id) && s.Count > 0 {
				w.slots++
			}
		}
	}
	return w
}

// inFlight puts a first contribution of the gang's workers (switch job id) into its first slot
// on every switch that has entries of it: a gang preempted mid-iteration holds slots.
func (e *env) inFlight(t *testing.T, j kubetest.Job, id int) {
	t.Helper()
	base, err := strconv.Atoi(e.pods(t, j)[0].Annotations[gang.SlotBaseAnnotation])
	kubetest.Fatal(t, err)
	for _, sw := range e.switches {
		for k := range sw.Jobs() {
			if k.Job == uint16(id) {
				kubetest.Fatal(t, sw.SetSlot(base, model.Slot{Job: uint16(id), Count: 1, Bitmap: 1}))
				break
			}
		}
	}
}

// succeed reports every pod of j Succeeded, as their kubelet would.
func (e *env) succeed(t *testing.T, j kubetest.Job) {
	t.Helper()
	for _, p := range e.pods(t, j) {
		p.Status.Phase = v1.PodSucceeded
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
		_, err := e.api.Client.CoreV1().Pods(ns).UpdateStatus(e.ctx, p, metav1.UpdateOptions{})
		kubetest.Fatal(t, err)
	}
}

// TestKueueAdmitsNetPackPlaces: with deploy/kueue applied (a Topology of racks and hosts, a
// ClusterQueue of 4 GPUs, its LocalQueue and the sample gang), Kueue admits gangs as its quota
// says and NetPack places each inside Kueue's topology assignment (each worker on the host Kueue
// gave it, which need not be NetPack's rank order), the operator programming the switches; a
// gang Kueue preempts for an urgent one leaves nothing on the switches.
func TestKueueAdmitsNetPackPlaces(t *testing.T) {
	e := start(t)
	kueuetest.Apply(e.ctx, t, e.api, sample)
	mlp := kubetest.Job{Namespace: ns, Name: "mlp", Workers: 2, GPUsPerWorker: 2}

	// The sample gang takes the whole quota; Kueue ungates it with host selectors.
	e.bound(t, mlp)
	w, ps := e.placedInside(t, mlp)
	t.Logf("gang mlp admitted and placed inside Kueue's assignment: workers %v ps %s", w, ps)
	mlpJob := e.switchJob(t, mlp)
	if at := e.onSwitches(t, mlpJob); !at.listed || at.entries == 0 {
		t.Errorf("gang mlp bound but its switch job %d is not on the switches: %+v", mlpJob, at)
	}

	// A second gang of 4 GPUs (1-GPU workers: Kueue pins two to a host) waits, gated, as Kueue
	// says: its quota is taken.
	b := kubetest.Job{Namespace: ns, Name: "b", Workers: 4, GPUsPerWorker: 1, Model: "vgg16", SchedulerName: "inapack-scheduler"}
	e.submit(t, b, "")
	e.waitFor(t, "gang b held back for quota", func() (bool, string) {
		wl, err := e.workload("b")
		if err != nil {
			return false, err.Error()
		}
		c := wl.condition("QuotaReserved")
		if c == nil {
			return false, "no QuotaReserved condition"
		}
		reserved, nominal, pending := e.clusterQueue(t)
		return c.Status == metav1.ConditionFalse && c.Reason == "Pending" && reserved == nominal && pending == 1,
			fmt.Sprintf("QuotaReserved %s %s: %s; ClusterQueue: %s of %s GPUs reserved, %d pending", c.Status, c.Reason, c.Message, reserved, nominal, pending)
	})
	reserved, nominal, _ := e.clusterQueue(t)
	wl, _ := e.workload("b")
	t.Logf("gang b waits: ClusterQueue training has %s of %s GPUs reserved; Workload b: QuotaReserved=False: %s", reserved, nominal, wl.condition("QuotaReserved").Message)
	time.Sleep(2 * time.Second) // time for a scheduler that ignored Kueue to bind b
	for _, p := range e.pods(t, b) {
		if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
			t.Errorf("pod %s of a gang Kueue holds back: node %q, gates %v", p.Name, p.Spec.NodeName, p.Spec.SchedulingGates)
		}
	}

	// mlp ends: the operator removes it from the switches, Kueue admits b, NetPack places it.
	e.succeed(t, mlp)
	e.bound(t, b)
	w, ps = e.placedInside(t, b)
	t.Logf("gang b admitted after mlp ended and placed inside Kueue's assignment: workers %v ps %s", w, ps)
	e.waitFor(t, "mlp off the switches", func() (bool, string) {
		at := e.onSwitches(t, mlpJob)
		return at == where{}, fmt.Sprintf("job %d: %+v", mlpJob, at)
	})
	bJob := e.switchJob(t, b)
	e.waitFor(t, "b on the switches", func() (bool, string) {
		at := e.onSwitches(t, bJob)
		return at.listed && at.entries > 0, fmt.Sprintf("gang b bound, its switch job %d: %+v", bJob, at)
	})
	e.inFlight(t, b, bJob)
	before := e.onSwitches(t, bJob)
	if before.slots == 0 {
		t.Fatalf("gang b's contributions in flight hold no slots: %+v", before)
	}

	// An urgent gang: Kueue preempts b (same ClusterQueue, lower priority); b's pods go and the
	// operator removes its switch job and frees its slots before their finalizers let them.
	c := kubetest.Job{Namespace: ns, Name: "c", Workers: 2, GPUsPerWorker: 2, Model: "resnet50", SchedulerName: "inapack-scheduler"}
	e.submit(t, c, "urgent")
	e.waitFor(t, "gang b preempted", func() (bool, string) {
		wl, err := e.workload("b")
		if err != nil {
			return false, err.Error()
		}
		ev := wl.condition("Evicted")
		return ev != nil && ev.Status == metav1.ConditionTrue && ev.Reason == "Preempted", fmt.Sprint(ev)
	})
	wl, _ = e.workload("b")
	t.Logf("gang b preempted: %s", wl.condition("Evicted").Message)
	e.waitFor(t, "b's pods gone and b off the switches", func() (bool, string) {
		_, pods := b.Objects()
		for _, p := range pods {
			cur, err := e.api.Client.CoreV1().Pods(ns).Get(e.ctx, p.Name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				fin := []string(nil)
				if cur != nil {
					fin = cur.Finalizers
				}
				return false, fmt.Sprintf("pod %s still there (finalizers %v)", p.Name, fin)
			}
		}
		at := e.onSwitches(t, bJob)
		return at == where{}, fmt.Sprintf("job %d: %+v", bJob, at)
	})
	e.bound(t, c)
	w, ps = e.placedInside(t, c)
	cJob := e.switchJob(t, c)
	e.waitFor(t, "c on the switches", func() (bool, string) {
		at := e.onSwitches(t, cJob)
		return at.listed && at.entries > 0, fmt.Sprintf("gang c bound, its switch job %d: %+v", cJob, at)
	})
	t.Logf("gang c (urgent) preempted b (switch job %d: %d entries and %d slots in use before, none after; off the controller's job list) and was placed: workers %v ps %s, switch job %d",
		bJob, before.entries, before.slots, w, ps, cJob)
}
