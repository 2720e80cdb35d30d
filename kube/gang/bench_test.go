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

// benchPlugin is the plugin's state as a benchmark drives it: the pod informer's store indexed
// by gang (PreEnqueue's and PreFilter's gang lookup) and the live view, fed the same events.
type benchPlugin struct {
	cfg  gang.Config
	idx  cache.Indexer
	live *gang.Live
}

func newBenchPlugin(tb testing.TB, s *synthetic) *benchPlugin {
	bp := &benchPlugin{cfg: gang.Config{}.WithDefaults(), idx: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{gang.IndexName: gang.IndexFunc})}
	bp.live = gang.NewLive(bp.cfg)
	for _, n := range s.nodes {
		bp.live.SetNode(n)
	}
	for _, p := range s.assigned {
		bp.setPod(tb, p)
	}
	return bp
}

// setPod is the pod informer's add or update: the store's indexer and the view's handler.
func (bp *benchPlugin) setPod(tb testing.TB, p *v1.Pod) {
	if err := bp.idx.Update(p); err != nil {
		tb.Fatal(err)
	}
	bp.live.SetPod(p)
}

func (bp *benchPlugin) collect(tb testing.TB, key gang.Key) *gang.Gang {
	objs, err := bp.idx.ByIndex(gang.IndexName, key.String())
	if err != nil {
		tb.Fatal(err)
	}
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*v1.Pod))
	}
	g, err := gang.Collect(key, pods, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// plan is the plugin's work for a gang up to its plan: PreEnqueue for each of its pods (the gang
// from the index, collected), then PreFilter for the first (the gang again, the plan its pods
// carry in the API: none, the live view with the gang's node constraints, NetPack's plan). The
// other pods' PreFilter, Filter and Score are map lookups in the plan.
func (bp *benchPlugin) plan(tb testing.TB, pods []*v1.Pod) (*gang.Plan, *gang.View) {
	key, _ := gang.KeyOf(pods[0])
	for range pods {
		bp.collect(tb, key)
	}
	g := bp.collect(tb, key)
	if saved, err := gang.PlanOf(g); saved != nil || err != nil {
		tb.Fatalf("gang %s carries a plan: %v", key, err)
	}
	v, err := bp.live.View(g)
	if err != nil {
		tb.Fatal(err)
	}
	pl, err := v.Place(bp.cfg, g, key.String())
	if err != nil {
		tb.Fatal(err)
	}
	return pl, v
}

// bind is Reserve for each pod of the plan (the view assumes it on its node), then its bind as
// the pod informer reports it.
func (bp *benchPlugin) bind(tb testing.TB, pl *gang.Plan, pods []*v1.Pod) {
	for _, p := range pods {
		bp.live.Assume(p, pl.Node[p.UID])
	}
	for _, p := range pods {
		cp := p.DeepCopy()
		cp.Spec.NodeName = pl.Node[p.UID]
		bp.setPod(tb, cp)
	}
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// BenchmarkPlanGang: the plugin's time for one gang (a PS and 4 workers of 8 GPUs), PreEnqueue
// and PreFilter on the live view, at 1,000 and 10,000 nodes, against netpack's own placement of
// the same job on the same cluster and running jobs (scheduler.Plan, what the scheduler service
// calls), the two timed alternately (which first alternating too) in each iteration. Reports
// each per gang and the median of the iterations' ratios plugin/netpack (-count gives the
// spread). The plugin keeps NetPack's placer from gang to gang (gang.Live), which scheduler.Plan
// makes anew: so the plugin may take less than netpack's own placement.
func BenchmarkPlanGang(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			s := newSynthetic(n)
			bp := newBenchPlugin(b, s)
			pending := gangPods("new", 4, gpusPerNode, nil)
			for _, p := range pending {
				bp.setPod(b, p)
			}
			v0, err := gang.NewView(bp.cfg, s.nodes, s.assigned)
			if err != nil {
				b.Fatal(err)
			}
			running := slices.SortedFunc(maps.Values(v0.Running), func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
			md, _ := netpack.Profile("resnet50")
			job := &netpack.Job{ID: "train/new", GPUs: 32, Model: md, Iterations: 1}
			bp.plan(b, pending) // the view's layout is made at the first gang
			var tPlugin, tNetpack time.Duration
			var ratios []float64
			i := 0
			for b.Loop() {
				var pl *gang.Plan
				var p netpack.Placement
				var ok bool
				var dp, dn time.Duration
				plugin := func() { t := time.Now(); pl, _ = bp.plan(b, pending); dp = time.Since(t) }
				own := func() {
					t := time.Now()
					p, ok, _, err = scheduler.Plan(v0.Cluster, running, bp.cfg.Policy, job)
					dn = time.Since(t)
				}
				if i%2 == 0 {
					plugin()
					own()
				} else {
					own()
					plugin()
				}
				i++
				if err != nil || !ok || !slices.Equal(p.Workers, pl.Placement.Workers) {
					b.Fatalf("netpack: ok=%v err=%v; workers %v, the plugin's %v", ok, err, p.Workers, pl.Placement.Workers)
				}
				tPlugin += dp
				tNetpack += dn
				ratios = append(ratios, float64(dp)/float64(dn))
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(tNetpack), "netpack-ns/gang")
			b.ReportMetric(per(tPlugin), "plugin-ns/gang")
			b.ReportMetric(median(ratios), "plugin/netpack")
		})
	}
}

// BenchmarkBacklog1000: a backlog of 1,000 gangs (a PS and two 8-GPU workers each) on 10,000
// nodes (half of them running gangs), each created, planned (PreEnqueue and PreFilter on the
// live view), reserved and bound where planned before the next, as the plugin takes them; one
// op is the whole backlog. Reports the plugin's time for the backlog (backlog-s: every event,
// PreEnqueue, PreFilter and Reserve) and, alternately with each gang's PreFilter, netpack's own
// placement of that gang on the same view (netpack-s, scheduler.Plan), and their ratio.
func BenchmarkBacklog1000(b *testing.B) {
	s := newSynthetic(10000)
	backlog := make([][]*v1.Pod, 1000)
	for i := range backlog {
		backlog[i] = gangPods(fmt.Sprintf("q%04d", i), 2, gpusPerNode, nil)
	}
	var tPlugin, tNetpack time.Duration
	for b.Loop() {
		bp := newBenchPlugin(b, s)
		md, _ := netpack.Profile("resnet50")
		for _, pods := range backlog {
			t0 := time.Now()
			for _, p := range pods {
				bp.setPod(b, p)
			}
			pl, v := bp.plan(b, pods)
			t1 := time.Now()
			// netpack's own on the view the gang was planned on (before the bind changes it)
			running := slices.SortedFunc(maps.Values(v.Running), func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
			t2 := time.Now()
			p, ok, _, err := scheduler.Plan(v.Cluster, running, bp.cfg.Policy, &netpack.Job{ID: pl.Key.String(), GPUs: 16, Model: md, Iterations: 1})
			t3 := time.Now()
			bp.bind(b, pl, pods)
			tPlugin += t1.Sub(t0) + time.Since(t3)
			tNetpack += t3.Sub(t2)
			if err != nil || !ok || !slices.Equal(p.Workers, pl.Placement.Workers) || p.PS != pl.Placement.PS {
				b.Fatalf("netpack: ok=%v err=%v; workers %v ps %d, the plugin's %v ps %d", ok, err, p.Workers, p.PS, pl.Placement.Workers, pl.Placement.PS)
			}
		}
	}
	b.ReportMetric(tPlugin.Seconds()/float64(b.N), "backlog-s")
	b.ReportMetric(tNetpack.Seconds()/float64(b.N), "netpack-s")
	b.ReportMetric(float64(tPlugin)/float64(tNetpack), "backlog/netpack")
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
