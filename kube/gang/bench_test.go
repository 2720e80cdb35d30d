package gang_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// A synthetic cluster as the plugin sees it: nodes of 8 GPUs in racks of 16 (rack labels, GPUs
// allocatable), and running gangs (a PS and two 8-GPU workers each) filling every other rack.
// Workers take whole nodes, as NetPack's plans of 8-GPU workers do, so every plan maps onto pods.
const (
	gpusPerNode  = 8
	nodesPerRack = 16
)

func node(i int) *v1.Node {
	q := *resource.NewQuantity(gpusPerNode, resource.DecimalSI)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%05d", i),
		Labels: map[string]string{gang.RackLabel: fmt.Sprintf("r%04d", i/nodesPerRack)}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{gang.GPUResource: q}}}
}

// gangPods are a label gang's pods: a PS and workers of gpus GPUs each, on nodes (one per pod,
// PS first) or pending (nodes nil).
func gangPods(name string, workers, gpus int, nodes []string) []*v1.Pod {
	pod := func(suffix, role string, g int) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name + "-" + suffix, UID: types.UID(name + "-" + suffix),
			Labels:      map[string]string{gang.JobLabel: name, gang.RoleLabel: role},
			Annotations: map[string]string{gang.MinCountAnnotation: fmt.Sprint(workers + 1)}}}
		c := v1.Container{Name: role}
		if g > 0 {
			c.Resources.Requests = v1.ResourceList{gang.GPUResource: *resource.NewQuantity(int64(g), resource.DecimalSI)}
		}
		p.Spec.Containers = []v1.Container{c}
		return p
	}
	pods := []*v1.Pod{pod("ps", gang.RolePS, 0)}
	for w := range workers {
		pods = append(pods, pod(fmt.Sprintf("w%d", w), gang.RoleWorker, gpus))
	}
	for i, n := range nodes {
		pods[i].Spec.NodeName = n
	}
	return pods
}

type synthetic struct {
	nodes    []*v1.Node
	assigned []*v1.Pod // the running gangs' pods
}

func newSynthetic(n int) *synthetic {
	s := &synthetic{}
	for i := range n {
		s.nodes = append(s.nodes, node(i))
	}
	// Every other rack: each node runs one worker of a gang whose other worker is the next node.
	for r := 0; r < n/nodesPerRack; r += 2 {
		for k := 0; k+1 < nodesPerRack; k += 2 {
			a, b := s.nodes[r*nodesPerRack+k].Name, s.nodes[r*nodesPerRack+k+1].Name
			s.assigned = append(s.assigned, gangPods(fmt.Sprintf("run-%d-%d", r, k), 2, gpusPerNode, []string{a, a, b})...)
		}
	}
	return s
}

// pluginPlan is what the plugin's PreFilter does for a gang's first pod: its gang from the pods,
// the view from every node and assigned pod (through cache unless nil), NetPack's plan.
func pluginPlan(b *testing.B, cache *gang.ViewCache, cfg gang.Config, nodes []*v1.Node, assigned, pending []*v1.Pod) *gang.Plan {
	key, _ := gang.KeyOf(pending[0])
	g, err := gang.Collect(key, pending, 0)
	if err != nil {
		b.Fatal(err)
	}
	var v *gang.View
	if cache != nil {
		v, err = cache.View(cfg, nodes, assigned)
	} else {
		v, err = gang.NewView(cfg, nodes, assigned)
	}
	if err != nil {
		b.Fatal(err)
	}
	// PreFilter's node constraints: every node checked against the gang's pods.
	refusal, refused := g.NodeFilter(), map[string]string{}
	for _, n := range nodes {
		if why := refusal(n, gang.Free{MilliCPU: 64000, Memory: 1 << 38}); why != "" {
			refused[n.Name] = why
		}
	}
	v.Exclude(refused)
	pl, err := v.Place(cfg, g, key.String())
	if err != nil {
		b.Fatal(err)
	}
	return pl
}

// BenchmarkPlanGang: the plugin's time to plan one gang (4 workers of 8 GPUs) at 1,000 and
// 10,000 nodes, against netpack's own placement of the same job on the same cluster and running
// jobs (scheduler.Plan, what the scheduler service calls), timed alternately in each iteration:
// the view built anew (gang.NewView) and through a ViewCache kept across gangs (warm, as after
// the first gang: what the plugin's PreFilter uses). Reports each per gang and the ratios to
// netpack's.
func BenchmarkPlanGang(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			cfg := gang.Config{}.WithDefaults()
			s := newSynthetic(n)
			pending := gangPods("new", 4, gpusPerNode, nil)
			v0, err := gang.NewView(cfg, s.nodes, s.assigned)
			if err != nil {
				b.Fatal(err)
			}
			running := slices.SortedFunc(maps.Values(v0.Running), func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
			md, _ := netpack.Profile("resnet50")
			job := &netpack.Job{ID: "train/new", GPUs: 32, Model: md, Iterations: 1}
			cache := &gang.ViewCache{}
			pluginPlan(b, cache, cfg, s.nodes, s.assigned, pending) // a plugin's cache is warm from earlier gangs
			var tPlugin, tCached, tNetpack time.Duration
			for b.Loop() {
				t0 := time.Now()
				pl := pluginPlan(b, nil, cfg, s.nodes, s.assigned, pending)
				t1 := time.Now()
				pc := pluginPlan(b, cache, cfg, s.nodes, s.assigned, pending)
				t2 := time.Now()
				p, ok, _, err := scheduler.Plan(v0.Cluster, running, cfg.Policy, job)
				t3 := time.Now()
				if err != nil || !ok || !slices.Equal(p.Workers, pl.Placement.Workers) || !slices.Equal(p.Workers, pc.Placement.Workers) {
					b.Fatalf("netpack: ok=%v err=%v; workers %v, the plugin's %v, cached %v", ok, err, p.Workers, pl.Placement.Workers, pc.Placement.Workers)
				}
				tPlugin += t1.Sub(t0)
				tCached += t2.Sub(t1)
				tNetpack += t3.Sub(t2)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(tNetpack), "netpack-ns/gang")
			b.ReportMetric(per(tPlugin), "plugin-ns/gang")
			b.ReportMetric(per(tCached), "cached-ns/gang")
			b.ReportMetric(float64(tPlugin)/float64(tNetpack), "plugin/netpack")
			b.ReportMetric(float64(tCached)/float64(tNetpack), "cached/netpack")
		})
	}
}

// BenchmarkBacklog1000: a backlog of 1,000 gangs (a PS and two 8-GPU workers each) planned one
// after another on 10,000 nodes, as the plugin plans them, each bound where planned before the
// next; one op is the whole backlog. view=new builds each gang's view anew, view=cached through
// a ViewCache.
func BenchmarkBacklog1000(b *testing.B) {
	cfg := gang.Config{}.WithDefaults()
	s := newSynthetic(10000)
	backlog := make([][]*v1.Pod, 1000)
	for i := range backlog {
		backlog[i] = gangPods(fmt.Sprintf("q%04d", i), 2, gpusPerNode, nil)
	}
	for _, cached := range []bool{false, true} {
		b.Run(map[bool]string{false: "view=new", true: "view=cached"}[cached], func(b *testing.B) {
			for b.Loop() {
				var cache *gang.ViewCache
				if cached {
					cache = &gang.ViewCache{}
				}
				assigned := slices.Clone(s.assigned)
				for _, pods := range backlog {
					pl := pluginPlan(b, cache, cfg, s.nodes, assigned, pods)
					for _, p := range pods {
						cp := p.DeepCopy()
						cp.Spec.NodeName = pl.Node[p.UID]
						assigned = append(assigned, cp)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000/1000, "ms/gang")
		})
	}
}

// BenchmarkPreEnqueue: PreEnqueue's gang lookup for one pod at 50,000 pods (the running gangs of
// 10,000 nodes and pods of no gang), through the informer's index by gang (what the plugin does)
// against listing every pod (what it did), timed alternately; Collect is part of both.
func BenchmarkPreEnqueue(b *testing.B) {
	s := newSynthetic(10000)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{gang.IndexName: gang.IndexFunc})
	all := slices.Clone(s.assigned)
	for i := 0; len(all) < 50000; i++ {
		all = append(all, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprint(i))}})
	}
	pending := gangPods("new", 4, gpusPerNode, nil)
	all = append(all, pending...)
	for _, p := range all {
		if err := idx.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	key, _ := gang.KeyOf(pending[0])
	var tIndex, tList time.Duration
	for b.Loop() {
		t0 := time.Now()
		objs, err := idx.ByIndex(gang.IndexName, key.String())
		if err != nil {
			b.Fatal(err)
		}
		pods := make([]*v1.Pod, 0, len(objs))
		for _, o := range objs {
			pods = append(pods, o.(*v1.Pod))
		}
		g1, err1 := gang.Collect(key, pods, 0)
		t1 := time.Now()
		var listed []*v1.Pod
		for _, o := range idx.List() {
			listed = append(listed, o.(*v1.Pod))
		}
		g2, err2 := gang.Collect(key, listed, 0)
		t2 := time.Now()
		if err1 != nil || err2 != nil || len(g1.Workers) != 4 || len(g2.Workers) != 4 {
			b.Fatalf("collect: %v %v", err1, err2)
		}
		tIndex += t1.Sub(t0)
		tList += t2.Sub(t1)
	}
	b.ReportMetric(float64(tIndex.Nanoseconds())/float64(b.N), "index-ns/call")
	b.ReportMetric(float64(tList.Nanoseconds())/float64(b.N), "list-ns/call")
	b.ReportMetric(float64(tIndex)/float64(tList), "index/list")
}
