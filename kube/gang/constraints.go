package gang

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/inapack/inapack/netpack"
)

// Free is what a node has left of CPU (milli-CPU) and memory (bytes) for the gang's pods: its
// allocatable less what other pods request.
type Free struct{ MilliCPU, Memory int64 }

// FreeOf is n's allocatable CPU and memory less the requests of pods (the pods on n).
func FreeOf(n *v1.Node, pods []*v1.Pod) Free {
	f := Free{MilliCPU: n.Status.Allocatable.Cpu().MilliValue(), Memory: n.Status.Allocatable.Memory().Value()}
	for _, p := range pods {
		if terminal(p) {
			continue
		}
		r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		f.MilliCPU -= r.Cpu().MilliValue()
		f.Memory -= r.Memory().Value()
	}
	return f
}

// Refusal says why no pod of g may go to node n ("" if some may), by the node constraints
// kube-scheduler's Filter plugins apply and NetPack's placement must respect too:
// spec.unschedulable (NodeUnschedulable), NoSchedule and NoExecute taints against each pod's
// tolerations (TaintToleration), node selector and required node affinity (NodeAffinity), and
// CPU and memory (NodeResourcesFit: free must hold the pod's requests). Each pod has its own:
// Kueue's topology-aware scheduling releases each worker of a gang with a node selector for the
// host of its own assignment. A node is a machine for the gang if some pod of it may go there;
// which pods may is noted on g (Place gives each pod a node it may use, and offers NetPack no
// more of a node's GPUs than the workers that may use it request). NodeFilter is the same, with
// the per-pod work done once for many nodes.
func (g *Gang) Refusal(n *v1.Node, free Free) string { return g.NodeFilter()(n, free) }

// NodeFilter is Refusal for one gang and many nodes: pods of the same constraints and requests
// (a job's workers but for Kueue's host selectors) are checked once per node.
func (g *Gang) NodeFilter() func(n *v1.Node, free Free) string { return g.nodeFilter().refusal }

// nodeFilter is NodeFilter with what a caller needs to skip nodes it knows pass: with no pod of
// the gang having a node selector or affinity (anyRule false), a node neither cordoned nor tainted
// whose free CPU (milli-CPU) and memory hold the largest pod's requests takes every pod.
type nodeFilter struct {
	refusal  func(n *v1.Node, free Free) string
	cpu, mem int64
	anyRule  bool
}

// plain: nothing on n but its CPU and memory can refuse a pod of a gang without node rules.
func plain(n *v1.Node) bool { return !n.Spec.Unschedulable && len(n.Spec.Taints) == 0 }

func (g *Gang) nodeFilter() nodeFilter {
	type class struct {
		p        *v1.Pod // the first of the class, named in refusals
		pods     podSet
		affinity nodeaffinity.RequiredNodeAffinity
		anyRule  bool
		cpu, mem int64
	}
	var classes []*class
	byKey := map[string]*class{}
	pods := g.Pods()
	for i, p := range pods {
		r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		var na *v1.NodeAffinity
		if p.Spec.Affinity != nil {
			na = p.Spec.Affinity.NodeAffinity
		}
		key, err := json.Marshal(struct {
			S    map[string]string
			A    *v1.NodeAffinity
			T    []v1.Toleration
			C, M int64
		}{p.Spec.NodeSelector, na, p.Spec.Tolerations, r.Cpu().MilliValue(), r.Memory().Value()})
		if err != nil { // no pod's spec fails to marshal; a class of its own then
			key = []byte(p.Name)
		}
		c := byKey[string(key)]
		if c == nil {
			c = &class{p: p, affinity: nodeaffinity.GetRequiredNodeAffinity(p), anyRule: len(p.Spec.NodeSelector) > 0 || na != nil,
				cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()}
			byKey[string(key)] = c
			classes = append(classes, c)
		}
		c.pods |= 1 << i
	}
	all := podSet(1)<<len(pods) - 1
	g.only = nil
	logger := klog.Background()
	cordon := &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	scheduling := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	refusal := func(c *class, n *v1.Node, free Free) string {
		if n.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, c.p.Spec.Tolerations, cordon, false) {
			return fmt.Sprintf("node %s is cordoned (spec.unschedulable)", n.Name)
		}
		if len(n.Spec.Taints) > 0 {
			if t, bad := corev1helpers.FindMatchingUntoleratedTaint(logger, n.Spec.Taints, c.p.Spec.Tolerations, scheduling, false); bad {
				return fmt.Sprintf("node %s has taint %s=%s:%s, which pod %s does not tolerate", n.Name, t.Key, t.Value, t.Effect, c.p.Name)
			}
		}
		if c.anyRule {
			if ok, _ := c.affinity.Match(n); !ok {
				return fmt.Sprintf("node %s does not match pod %s's node selector or affinity", n.Name, c.p.Name)
			}
		}
		if c.cpu > free.MilliCPU || c.mem > free.Memory {
			return fmt.Sprintf("node %s has %dm CPU and %d B memory free; pod %s requests %dm and %d B", n.Name, free.MilliCPU, free.Memory, c.p.Name, c.cpu, c.mem)
		}
		return ""
	}
	var cpu, mem int64
	anyRule := false
	for _, c := range classes {
		cpu, mem, anyRule = max(cpu, c.cpu), max(mem, c.mem), anyRule || c.anyRule
	}
	return nodeFilter{cpu: cpu, mem: mem, anyRule: anyRule, refusal: func(n *v1.Node, free Free) string {
		var may podSet
		why := ""
		for _, c := range classes {
			if w := refusal(c, n, free); w == "" {
				may |= c.pods
			} else if why == "" {
				why = w
			}
		}
		if may != all {
			if g.only == nil {
				g.only = map[string]podSet{}
			}
			g.only[n.Name] = may
		}
		if may == 0 {
			return why
		}
		return ""
	}}
}

// Exclude takes the nodes of refused (node name -> why) out of NetPack's choice: a refused node
// keeps the GPUs running gangs hold on it (so their placements stay whole) and offers no more.
// Each View has its own machines, so this changes no other View.
func (v *View) Exclude(refused map[string]string) {
	if len(refused) == 0 {
		return
	}
	used := map[netpack.MachineID]int{}
	for _, p := range v.Running {
		for _, w := range p.Workers {
			used[w.Machine] += w.GPUs
		}
	}
	for _, n := range slices.Sorted(maps.Keys(refused)) {
		if m, ok := v.Machine[n]; ok {
			v.Cluster.Machines[m].GPUs = min(v.Cluster.Machines[m].GPUs, used[m])
		}
	}
	v.Refused = refused
}
