package gang_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// sameView fails t unless got is want in every part NetPack places with.
func sameView(t *testing.T, what string, got, want *gang.View) {
	t.Helper()
	if !reflect.DeepEqual(got.Cluster, want.Cluster) || !reflect.DeepEqual(got.Nodes, want.Nodes) ||
		!reflect.DeepEqual(got.Running, want.Running) || !reflect.DeepEqual(got.Unlabelled, want.Unlabelled) {
		t.Errorf("%s: the live view differs from NewView's:\n live machines %v running %v\n want machines %v running %v",
			what, got.Cluster.Machines, got.Running, want.Cluster.Machines, want.Running)
	}
}

// world is what the informers hold, fed to a Live event by event and to NewView whole.
type world struct {
	t     *testing.T
	live  *gang.Live
	nodes map[string]*v1.Node
	pods  map[types.UID]*v1.Pod
}

func (w *world) setNode(n *v1.Node)  { w.nodes[n.Name] = n; w.live.SetNode(n) }
func (w *world) delNode(name string) { delete(w.nodes, name); w.live.DeleteNode(name) }
func (w *world) setPod(p *v1.Pod)    { w.pods[p.UID] = p; w.live.SetPod(p) }
func (w *world) delPod(uid types.UID) {
	delete(w.pods, uid)
	w.live.DeletePod(uid)
}

func (w *world) check(what string) {
	w.t.Helper()
	var nodes []*v1.Node
	for _, n := range w.nodes {
		nodes = append(nodes, n)
	}
	var assigned []*v1.Pod
	for _, p := range w.pods {
		if p.Spec.NodeName != "" {
			assigned = append(assigned, p)
		}
	}
	want, err := gang.NewView(gang.Config{}, nodes, assigned)
	if err != nil {
		w.t.Fatal(err)
	}
	got, err := w.live.View(nil)
	if err != nil {
		w.t.Fatalf("%s: %v", what, err)
	}
	sameView(w.t, what, got, want)
	for _, n := range nodes {
		var on []*v1.Pod
		for _, p := range assigned {
			if p.Spec.NodeName == n.Name {
				on = append(on, p)
			}
		}
		if f, ok := w.live.Free(n.Name); !ok || f != gang.FreeOf(n, on) {
			w.t.Errorf("%s: node %s: live free %+v, FreeOf %+v", what, n.Name, f, gang.FreeOf(n, on))
		}
	}
}

func withCPU(p *v1.Pod, cpu, mem string) *v1.Pod {
	if p.Spec.Containers[0].Resources.Requests == nil {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
	}
	p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	return p
}

// TestLiveEqualsNewView: events in, view out. A Live fed the informers' events (pods before
// their nodes, gangs bound, updated, deleted, pods of no gang taking a node's GPUs, nodes
// updated and deleted) equals NewView of what the informers hold after each event, and each
// node's free CPU and memory are FreeOf's.
func TestLiveEqualsNewView(t *testing.T) {
	s := newSynthetic(64)
	w := &world{t: t, live: gang.NewLive(gang.Config{}), nodes: map[string]*v1.Node{}, pods: map[types.UID]*v1.Pod{}}
	for _, p := range s.assigned[:6] { // pods first: the pod informer may be ahead of the node one
		w.setPod(p)
	}
	for _, n := range s.nodes {
		n = n.DeepCopy()
		n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("16")
		n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("64Gi")
		w.setNode(n)
	}
	for _, p := range s.assigned[6:] {
		w.setPod(p)
	}
	w.check("synced")

	pending := gangPods("new", 2, gpusPerNode, nil)
	for _, p := range pending {
		w.setPod(withCPU(p, "2", "1Gi")) // on no node: nothing changes
	}
	w.check("a gang pending")
	for i, n := range []string{"n00016", "n00016", "n00017"} {
		p := w.pods[pending[i].UID].DeepCopy()
		p.Spec.NodeName = n
		w.setPod(p)
		w.check(fmt.Sprintf("a gang bound, pod %d", i))
	}
	other := withCPU(gangPods("other", 1, 3, nil)[1], "1", "2Gi")
	delete(other.Labels, gang.JobLabel)
	other.UID, other.Spec.NodeName = "other", "n00020"
	w.setPod(other)
	w.check("a pod of no gang takes 3 GPUs")
	full := other.DeepCopy()
	full.UID, full.Name = "full", "full"
	full.Spec.Containers[0].Resources.Requests[gang.GPUResource] = *resource.NewQuantity(gpusPerNode, resource.DecimalSI)
	full.Spec.NodeName = "n00021"
	w.setPod(full)
	w.check("a pod of no gang takes a node's every GPU")
	w.delPod(full.UID)
	w.check("it is deleted")

	moved := w.pods[pending[2].UID].DeepCopy()
	moved.Spec.NodeName = "n00018"
	w.setPod(moved)
	w.check("a gang's pod moves")
	ended := w.pods[pending[1].UID].DeepCopy()
	ended.Status.Phase = v1.PodSucceeded
	w.setPod(ended)
	w.check("a gang's worker ends")
	going := w.pods[pending[0].UID].DeepCopy()
	going.DeletionTimestamp = &metav1.Time{}
	w.setPod(going)
	w.check("a gang's PS is being deleted")
	for _, p := range pending {
		w.delPod(p.UID)
	}
	w.check("the gang is deleted")
	for _, p := range s.assigned[:3] {
		w.delPod(p.UID)
	}
	w.check("a running gang is deleted")

	n := w.nodes["n00020"].DeepCopy()
	n.Status.Allocatable[gang.GPUResource] = *resource.NewQuantity(4, resource.DecimalSI)
	w.setNode(n)
	w.check("a node's GPUs change")
	n = w.nodes["n00022"].DeepCopy()
	n.Labels[gang.RackLabel] = "r9999"
	w.setNode(n)
	w.check("a node moves rack")
	n = w.nodes["n00023"].DeepCopy()
	delete(n.Labels, gang.RackLabel)
	w.setNode(n)
	w.check("a node loses its rack label")
	w.delNode("n00020")
	w.check("a node with a pod is deleted")
	w.setNode(s.nodes[20].DeepCopy())
	w.check("it comes back")
	w.delNode("n00063")
	w.check("a node is deleted")
}

// TestLiveAssumedPodsCount: a gang's pods assumed by Reserve (not bound in the API yet, their
// plan annotations written onto them) hold their nodes' GPUs: the next gang is planned onto
// other nodes, not onto the same GPUs. Forget (Unreserve) gives them back; a bound pod stays.
func TestLiveAssumedPodsCount(t *testing.T) {
	s := newSynthetic(32) // racks r0000 full, r0001 empty
	live := gang.NewLive(gang.Config{})
	for _, n := range s.nodes {
		live.SetNode(n)
	}
	for _, p := range s.assigned {
		live.SetPod(p)
	}
	plan := func(name string) (*gang.Plan, []*v1.Pod) {
		t.Helper()
		pods := gangPods(name, 2, gpusPerNode, nil)
		for _, p := range pods {
			live.SetPod(p)
		}
		key, _ := gang.KeyOf(pods[0])
		g, err := gang.Collect(key, pods, 0)
		if err != nil {
			t.Fatal(err)
		}
		v, err := live.View(g)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := v.Place(gang.Config{}, g, name)
		if err != nil {
			t.Fatal(err)
		}
		return pl, pods
	}
	workerNodes := func(pl *gang.Plan, pods []*v1.Pod) []string {
		var ns []string
		for _, p := range pods[1:] {
			ns = append(ns, pl.Node[p.UID])
		}
		return ns
	}
	a, aPods := plan("a")
	for _, p := range aPods {
		live.Assume(p, a.Node[p.UID]) // Reserve
		annotated := p.DeepCopy()     // PreBind writes the plan onto the pod before any is bound
		annotated.Annotations = a.Annotations(p)
		live.SetPod(annotated)
	}
	b, bPods := plan("b")
	if an, bn := workerNodes(a, aPods), workerNodes(b, bPods); slices.ContainsFunc(bn, func(n string) bool { return slices.Contains(an, n) }) {
		t.Fatalf("gang b's workers are planned on %v, where gang a's assumed workers hold every GPU (%v)", bn, an)
	}
	for _, p := range aPods {
		live.Forget(p.UID) // Unreserve
	}
	if b2, _ := plan("b"); !reflect.DeepEqual(workerNodes(b2, bPods), workerNodes(a, aPods)) {
		t.Errorf("with gang a's pods forgotten, gang b is planned on %v, not on a's nodes %v", workerNodes(b2, bPods), workerNodes(a, aPods))
	}
	for _, p := range aPods { // bound this time: Forget must not take them off
		live.Assume(p, a.Node[p.UID])
		bound := p.DeepCopy()
		bound.Spec.NodeName = a.Node[p.UID]
		live.SetPod(bound)
		live.Forget(p.UID)
	}
	if b3, _ := plan("b"); !reflect.DeepEqual(workerNodes(b3, bPods), workerNodes(b, bPods)) {
		t.Errorf("with gang a bound, gang b is planned on %v; want %v", workerNodes(b3, bPods), workerNodes(b, bPods))
	}
}

// TestLiveNodeConstraints: View(g) takes out of g's choice the nodes Gang.NodeFilter refuses,
// with the CPU and memory the pods on each node leave, and only those.
func TestLiveNodeConstraints(t *testing.T) {
	s := newSynthetic(32)
	live := gang.NewLive(gang.Config{})
	for _, n := range s.nodes {
		n = n.DeepCopy()
		n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8")
		n.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("32Gi")
		switch n.Name {
		case "n00016":
			n.Spec.Unschedulable = true
		case "n00017":
			n.Spec.Taints = []v1.Taint{{Key: "gpu", Value: "broken", Effect: v1.TaintEffectNoSchedule}}
		}
		live.SetNode(n)
	}
	hog := withCPU(gangPods("hog", 1, 0, nil)[1], "7", "1Gi")
	delete(hog.Labels, gang.JobLabel)
	hog.UID, hog.Spec.NodeName = "hog", "n00018"
	live.SetPod(hog)
	pods := gangPods("c", 2, gpusPerNode, nil)
	for _, p := range pods {
		withCPU(p, "2", "1Gi")
	}
	key, _ := gang.KeyOf(pods[0])
	g, err := gang.Collect(key, pods, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := live.View(g)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for n := range v.Refused {
		refused = append(refused, n)
	}
	slices.Sort(refused)
	if want := []string{"n00016", "n00017", "n00018"}; !slices.Equal(refused, want) {
		t.Fatalf("refused %v (%v); want %v", refused, v.Refused, want)
	}
	live.DeletePod(hog.UID)
	if v, _ = live.View(g); len(v.Refused) != 2 {
		t.Errorf("with the CPU hog gone, refused %v; want the cordoned and the tainted node", v.Refused)
	}
}

// TestLivePlansAsSchedulerPlan: gangs planned one after another on a Live (its placer and State
// kept from gang to gang) get scheduler.Plan's placement on NewView of the same pods, with the
// same nodes refused, as gangs are bound, deleted, and nodes cordoned and uncordoned.
func TestLivePlansAsSchedulerPlan(t *testing.T) {
	s := newSynthetic(256)
	cfg := gang.Config{}.WithDefaults()
	w := &world{t: t, live: gang.NewLive(cfg), nodes: map[string]*v1.Node{}, pods: map[types.UID]*v1.Pod{}}
	for _, n := range s.nodes {
		w.setNode(n)
	}
	for _, p := range s.assigned {
		w.setPod(p)
	}
	rng := rand.New(rand.NewPCG(1, 41))
	var bound [][]*v1.Pod
	planned, unmappable := 0, 0
	for step := range 120 {
		switch r := rng.IntN(10); {
		case r == 0 && len(bound) > 0: // a running gang ends
			i := rng.IntN(len(bound))
			for _, p := range bound[i] {
				w.delPod(p.UID)
			}
			bound = slices.Delete(bound, i, i+1)
			continue
		case r == 1: // a node is cordoned, or uncordoned
			n := w.nodes[fmt.Sprintf("n%05d", rng.IntN(256))].DeepCopy()
			n.Spec.Unschedulable = !n.Spec.Unschedulable
			w.setNode(n)
			continue
		case r == 2: // a pod of no gang takes 2 GPUs of a node, or its GPUs come back
			if _, ok := w.pods["solo"]; ok {
				w.delPod("solo")
				continue
			}
			solo := gangPods("solo", 1, 2, nil)[1]
			delete(solo.Labels, gang.JobLabel)
			solo.UID, solo.Spec.NodeName = "solo", fmt.Sprintf("n%05d", rng.IntN(256))
			w.setPod(solo)
			continue
		}
		gpus := []int{4, 8}[rng.IntN(2)]
		pods := gangPods(fmt.Sprintf("g%03d", step), 1+rng.IntN(4), gpus, nil)
		for _, p := range pods {
			w.setPod(p)
		}
		key, _ := gang.KeyOf(pods[0])
		g, err := gang.Collect(key, pods, 0)
		if err != nil {
			t.Fatal(err)
		}
		v, err := w.live.View(g)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := v.Place(cfg, g, key.String())

		var nodes []*v1.Node
		for _, n := range w.nodes {
			nodes = append(nodes, n)
		}
		var assigned []*v1.Pod
		for _, p := range w.pods {
			if p.Spec.NodeName != "" {
				assigned = append(assigned, p)
			}
		}
		nv, err := gang.NewView(cfg, nodes, assigned)
		if err != nil {
			t.Fatal(err)
		}
		nv.Exclude(v.Refused)
		running := slices.SortedFunc(maps.Values(nv.Running), func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
		want, ok, _, err := scheduler.Plan(nv.Cluster, running, cfg.Policy, &netpack.Job{ID: key.String(), GPUs: g.GPUs(), Model: g.Model, Iterations: 1, PSMaxGPUs: g.PSMaxGPUs()})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if gotErr == nil {
				t.Fatalf("step %d: gang %s: the Live planned %v; scheduler.Plan finds no placement", step, key, got.Placement.Workers)
			}
			for _, p := range pods {
				w.delPod(p.UID)
			}
			continue
		}
		if gotErr != nil && !errors.Is(gotErr, gang.ErrNoFit) {
			t.Fatal(gotErr)
		}
		if gotErr != nil && strings.Contains(gotErr.Error(), "a worker pod runs on one node") {
			unmappable++ // NetPack's placement splits GPUs no set of the pods makes up: not bound
			for _, p := range pods {
				w.delPod(p.UID)
			}
			continue
		}
		if gotErr != nil || !slices.Equal(got.Placement.Workers, want.Workers) || got.Placement.INA != want.INA || got.Placement.Priority != want.Priority {
			t.Fatalf("step %d: gang %s: the Live plans %+v (%v); scheduler.Plan %v ps %d ina %v", step, key, got, gotErr, want.Workers, want.PS, want.INA)
		}
		planned++
		for _, p := range pods { // Reserve, then the bind as the informer tells it
			w.live.Assume(p, got.Node[p.UID])
		}
		var b []*v1.Pod
		for _, p := range pods {
			cp := p.DeepCopy()
			cp.Spec.NodeName = got.Node[p.UID]
			w.setPod(cp)
			b = append(b, cp)
		}
		bound = append(bound, b)
	}
	if planned < 40 {
		t.Fatalf("only %d gangs planned: the test checks too little", planned)
	}
	t.Logf("%d gangs planned as scheduler.Plan plans them (%d more whose placement no set of their pods makes up)", planned, unmappable)
}

// TestLiveFreeGPUs: a node's free GPUs are its allocatable less every pod counted on it, bound or
// assumed, of a gang or of none, terminal pods aside; the gang asked about does not count its own
// pods; a node gone has none. Then ViewRefusing: a node refused by the caller offers NetPack no
// GPUs, and the refusal is the View's.
func TestLiveFreeGPUs(t *testing.T) {
	live := gang.NewLive(gang.Config{})
	for i := range 3 {
		live.SetNode(node(i)) // n00000..n00002, 8 GPUs each
	}
	a := gangPods("a", 1, 2, []string{"n00000", "n00000"})      // bound: PS and a 2-GPU worker
	b := gangPods("b", 2, 2, nil)                               // pending
	other := gangPods("other", 1, 4, []string{"", "n00000"})[1] // a pod of no gang, below
	delete(other.Labels, gang.JobLabel)
	done := other.DeepCopy()
	done.UID, done.Name, done.Status.Phase = "done", "done", v1.PodSucceeded
	for _, p := range append(a, other, done) {
		live.SetPod(p)
	}
	live.Assume(b[1], "n00000") // Reserve's (the extender's plan)
	for _, c := range []struct {
		except string
		want   int
	}{{"a", 8 - 4 - 2}, {"b", 8 - 4 - 2}, {"c", 8 - 4 - 2 - 2}} {
		got, ok := live.FreeGPUs("n00000", gang.Key{Namespace: "train", Name: c.except, ByLabel: true})
		if !ok || got != c.want {
			t.Errorf("FreeGPUs(n00000, but %s) = %d, %v; want %d", c.except, got, ok, c.want)
		}
	}
	live.Forget(b[1].UID)
	if got, _ := live.FreeGPUs("n00000", gang.Key{}); got != 8-4-2 {
		t.Errorf("after Forget: %d GPUs free, want %d", got, 8-4-2)
	}

	g, err := gang.Collect(gang.Key{Namespace: "train", Name: "b", ByLabel: true}, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := live.ViewRefusing(g, map[string]string{"n00001": "kube-scheduler's filters reject it"})
	if err != nil {
		t.Fatal(err)
	}
	if m := v.Machine["n00001"]; v.Cluster.Machines[m].GPUs != 0 || v.Refused["n00001"] == "" {
		t.Errorf("refused n00001 offers %d GPUs, refusals %v", v.Cluster.Machines[m].GPUs, v.Refused)
	}
	pl, err := v.Place(gang.Config{}, g, "b#1")
	if err != nil {
		t.Fatal(err)
	}
	for uid, n := range pl.Node {
		if n == "n00001" {
			t.Errorf("pod %s planned on refused n00001", uid)
		}
	}
	live.DeleteNode("n00002")
	if _, ok := live.FreeGPUs("n00002", gang.Key{}); ok {
		t.Error("a deleted node has free GPUs")
	}
}
