package gang

import (
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

// Refusal says why no pod of g may go to node n ("" if every one may), by the node constraints
// kube-scheduler's Filter plugins apply and NetPack's placement must respect too:
// spec.unschedulable (NodeUnschedulable), NoSchedule and NoExecute taints against each pod's
// tolerations (TaintToleration), node selector and required node affinity (NodeAffinity), and
// CPU and memory (NodeResourcesFit: free must hold the largest pod's requests). A node is a
// machine for the gang only if all of its pods may go there: NetPack picks machines, and which
// pod lands on which of them is decided after. NodeFilter is the same, with the per-pod work done
// once for many nodes.
func (g *Gang) Refusal(n *v1.Node, free Free) string { return g.NodeFilter()(n, free) }

// NodeFilter is Refusal for one gang and many nodes: the pods' requests and affinities are read
// once.
func (g *Gang) NodeFilter() func(n *v1.Node, free Free) string { return g.nodeFilter().refusal }

// nodeFilter is NodeFilter with what a caller needs to skip nodes it knows pass: with no pod of
// the gang having a node selector or affinity (anyRule false), a node neither cordoned nor tainted
// is refused only for want of CPU (milli-CPU) or memory.
type nodeFilter struct {
	refusal  func(n *v1.Node, free Free) string
	cpu, mem int64
	anyRule  bool
}

// plain: nothing on n but its CPU and memory can refuse a pod of a gang without node rules.
func plain(n *v1.Node) bool { return !n.Spec.Unschedulable && len(n.Spec.Taints) == 0 }

func (g *Gang) nodeFilter() nodeFilter {
	type podRule struct {
		p        *v1.Pod
		affinity nodeaffinity.RequiredNodeAffinity
		anyRule  bool
	}
	var rules []podRule
	var cpu, mem int64
	anyRule := false
	for _, p := range g.Pods() {
		rules = append(rules, podRule{p: p, affinity: nodeaffinity.GetRequiredNodeAffinity(p),
			anyRule: len(p.Spec.NodeSelector) > 0 || (p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil)})
		anyRule = anyRule || rules[len(rules)-1].anyRule
		r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu, mem = max(cpu, r.Cpu().MilliValue()), max(mem, r.Memory().Value())
	}
	logger := klog.Background()
	cordon := &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}
	scheduling := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	return nodeFilter{cpu: cpu, mem: mem, anyRule: anyRule, refusal: func(n *v1.Node, free Free) string {
		for _, r := range rules {
			if n.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, r.p.Spec.Tolerations, cordon, false) {
				return fmt.Sprintf("node %s is cordoned (spec.unschedulable)", n.Name)
			}
			if len(n.Spec.Taints) > 0 {
				if t, bad := corev1helpers.FindMatchingUntoleratedTaint(logger, n.Spec.Taints, r.p.Spec.Tolerations, scheduling, false); bad {
					return fmt.Sprintf("node %s has taint %s=%s:%s, which pod %s does not tolerate", n.Name, t.Key, t.Value, t.Effect, r.p.Name)
				}
			}
			if r.anyRule {
				if ok, _ := r.affinity.Match(n); !ok {
					return fmt.Sprintf("node %s does not match pod %s's node selector or affinity", n.Name, r.p.Name)
				}
			}
		}
		if cpu > free.MilliCPU || mem > free.Memory {
			return fmt.Sprintf("node %s has %dm CPU and %d B memory free; a pod of gang %s requests %dm and %d B", n.Name, free.MilliCPU, free.Memory, g.Key, cpu, mem)
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
