package gang

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/netpack"
)

// podSet is a set of a gang's pods, by their index in Gang.Pods (bit 0 the PS; at most 33 pods).
type podSet uint64

// may: pod i of g may go to node (NodeFilter passed it for that pod, or did not look at it).
func (g *Gang) may(node string, i int) bool {
	s, ok := g.only[node]
	return !ok || s&(1<<i) != 0
}

// offered is v's cluster as NetPack may use it for g: a node only some of g's workers may use
// offers no more GPUs than those workers request (beyond what running gangs hold on it), so that
// NetPack's placement can be made up of pods that may go there. Kueue's host selectors make this
// exact: each host offers the GPUs of the pods Kueue assigned to it. v's own cluster when every
// node NodeFilter passed may take every pod.
func (v *View) offered(g *Gang, running []netpack.Placement) *netpack.Cluster {
	if len(g.only) == 0 {
		return v.Cluster
	}
	used := map[netpack.MachineID]int{}
	for _, p := range running {
		for _, w := range p.Workers {
			used[w.Machine] += w.GPUs
		}
	}
	cl := *v.Cluster
	cl.Machines = slices.Clone(v.Cluster.Machines)
	for node, s := range g.only {
		m, ok := v.Machine[node]
		if !ok {
			continue
		}
		gpus := 0
		for i, w := range g.Workers {
			if s&(1<<(i+1)) != 0 {
				gpus += PodGPUs(w)
			}
		}
		cl.Machines[m].GPUs = min(cl.Machines[m].GPUs, used[m]+gpus)
	}
	return &cl
}

// assignSteps bounds assign's search: a gang has at most 32 workers, and pods alike (same GPUs,
// same nodes allowed) are placed in order, so a search that needs more is a plan the pods'
// constraints do not fit in any way worth looking for.
const assignSteps = 100_000

// assign gives each worker machine of placement p whole worker pods of g that may go there and
// request its GPUs exactly, pods in name order per machine. Without per-pod constraints it is the
// first fit of the largest pods, machine by machine; with them (each pod only some nodes: Kueue's
// host selectors) a search that backs up where a choice leaves a machine that no pod left may
// fill. The error says which machine could not be made up.
func (v *View) assign(g *Gang, p netpack.Placement) (map[netpack.MachineID][]*v1.Pod, error) {
	type pod struct {
		p    *v1.Pod
		gpus int
		ok   []bool // by p.Workers index: may go there
	}
	pods := make([]pod, len(g.Workers))
	for i, w := range g.Workers {
		pods[i] = pod{p: w, gpus: PodGPUs(w), ok: make([]bool, len(p.Workers))}
		for k, pw := range p.Workers {
			pods[i].ok[k] = g.may(v.Nodes[pw.Machine], i+1)
		}
	}
	// Largest pods first, so that a machine's GPUs are made up of whole pods where they can be;
	// among equals, those allowed on fewer machines first.
	count := func(ok []bool) int {
		n := 0
		for _, b := range ok {
			n += btoi(b)
		}
		return n
	}
	slices.SortStableFunc(pods, func(a, b pod) int {
		return cmp.Or(cmp.Compare(b.gpus, a.gpus), cmp.Compare(count(a.ok), count(b.ok)))
	})
	left := make([]int, len(p.Workers))
	for k, w := range p.Workers {
		left[k] = w.GPUs
	}
	at := make([]int, len(pods))
	steps := 0
	var place func(i int) bool
	place = func(i int) bool {
		if i == len(pods) {
			return !slices.ContainsFunc(left, func(n int) bool { return n != 0 })
		}
		if steps++; steps > assignSteps {
			return false
		}
		from := 0
		if i > 0 && pods[i-1].gpus == pods[i].gpus && slices.Equal(pods[i-1].ok, pods[i].ok) {
			from = at[i-1] // alike pods in machine order: no permutation of them is tried twice
		}
		for k := from; k < len(left); k++ {
			if !pods[i].ok[k] || left[k] < pods[i].gpus {
				continue
			}
			at[i] = k
			left[k] -= pods[i].gpus
			if place(i + 1) {
				return true
			}
			left[k] += pods[i].gpus
		}
		return false
	}
	if !place(0) {
		// Say which machine no pod that may go there can fill, the first with the fewest GPUs
		// requested by such pods.
		for k, w := range p.Workers {
			have := 0
			for _, pd := range pods {
				if pd.ok[k] {
					have += pd.gpus
				}
			}
			if have < w.GPUs {
				return nil, fmt.Errorf("the placement puts %d GPUs on node %s, and the worker pods that may go there request %d", w.GPUs, v.Nodes[w.Machine], have)
			}
		}
		return nil, fmt.Errorf("no assignment of the worker pods (each on a node it may use, whole) makes up the GPUs the placement puts on nodes %v (a worker pod runs on one node)", v.names(p.Workers))
	}
	out := map[netpack.MachineID][]*v1.Pod{}
	for i, k := range at {
		m := p.Workers[k].Machine
		out[m] = append(out[m], pods[i].p)
	}
	for _, on := range out {
		slices.SortFunc(on, func(a, b *v1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	}
	return out, nil
}

func (v *View) names(ws []netpack.Worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s:%d", v.Nodes[w.Machine], w.GPUs))
	}
	return out
}
