package gang_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inapack/inapack/kube/gang"
)

const hostLabel = "kubernetes.io/hostname"

// hosts are n nodes of gpus GPUs, two to a rack, labelled with their host name as the kubelet does.
func hosts(n, gpus int) []*v1.Node {
	var out []*v1.Node
	for i := range n {
		nd := node(i)
		nd.Name = fmt.Sprintf("h%d", i+1)
		nd.Labels[gang.RackLabel] = fmt.Sprintf("r%d", i/2)
		nd.Labels[hostLabel] = nd.Name
		nd.Status.Allocatable[gang.GPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
		out = append(out, nd)
	}
	return out
}

// plan is the plugin's PreFilter on a gang: NodeFilter over every node, Exclude, Place.
func plan(t *testing.T, nodes []*v1.Node, pods []*v1.Pod) (*gang.Gang, *gang.Plan, error) {
	t.Helper()
	key, _ := gang.KeyOf(pods[0])
	g, err := gang.Collect(key, pods, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := gang.NewView(gang.Config{}, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	refusal, refused := g.NodeFilter(), map[string]string{}
	for _, n := range nodes {
		if why := refusal(n, gang.Free{MilliCPU: 64000, Memory: 1 << 38}); why != "" {
			refused[n.Name] = why
		}
	}
	v.Exclude(refused)
	pl, err := v.Place(gang.Config{}, g, key.Name+"#1")
	return g, pl, err
}

// TestPlanHonoursEachPodsNodes: each pod of a gang goes to a node its own node selector allows,
// as Kueue's topology-aware scheduling releases them (each worker pinned to the host of its
// assignment, the PS free); pods pinned in the order opposite to NetPack's ranks, two 1-GPU pods
// to a host, a PS pinned off the workers' hosts, a whole gang in one rack (one selector for all),
// and a gang whose pods' hosts cannot hold it (no fit, saying where).
func TestPlanHonoursEachPodsNodes(t *testing.T) {
	pin := func(pods []*v1.Pod, hostOf ...string) []*v1.Pod {
		for i, h := range hostOf {
			if h != "" {
				pods[i].Spec.NodeSelector = map[string]string{hostLabel: h}
			}
		}
		return pods
	}
	check := func(t *testing.T, g *gang.Gang, pl *gang.Plan) {
		t.Helper()
		for _, p := range g.Pods() {
			if want, ok := p.Spec.NodeSelector[hostLabel]; ok && pl.Node[p.UID] != want {
				t.Errorf("pod %s planned on %s; its node selector asks for %s (plan %s)", p.Name, pl.Node[p.UID], want, pl)
			}
			if r, ok := p.Spec.NodeSelector[gang.RackLabel]; ok && !strings.HasPrefix(pl.Node[p.UID], "h") {
				t.Errorf("pod %s planned on %q; its node selector asks for rack %s", p.Name, pl.Node[p.UID], r)
			}
		}
	}
	t.Run("HostsAgainstRankOrder", func(t *testing.T) {
		// Kueue pinned worker 0 to h4 and worker 1 to h3: NetPack's rank order would swap them.
		g, pl, err := plan(t, hosts(4, 2), pin(gangPods("swap", 2, 2, nil), "", "h4", "h3"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, g, pl)
		t.Logf("plan %s", pl)
	})
	t.Run("TwoPodsToAHost", func(t *testing.T) {
		g, pl, err := plan(t, hosts(4, 2), pin(gangPods("pairs", 4, 1, nil), "", "h3", "h1", "h3", "h1"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, g, pl)
		for _, h := range []string{"h1", "h3"} {
			members := map[int]bool{}
			for _, w := range g.Workers {
				if pl.Node[w.UID] == h {
					members[pl.Member[w.UID]] = true
				}
			}
			if !members[0] || !members[1] {
				t.Errorf("host %s: members %v, want 0 and 1", h, members)
			}
		}
		// The PS may go anywhere; not where two of the workers are.
		if pl.PSNode == "h1" || pl.PSNode == "h3" {
			t.Errorf("PS on %s with two workers of the gang", pl.PSNode)
		}
	})
	t.Run("PSPinned", func(t *testing.T) {
		g, pl, err := plan(t, hosts(4, 2), pin(gangPods("ps", 2, 2, nil), "h2", "h3", "h4"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, g, pl)
		if pl.Local != "" || len(pl.Why) != 1 || !strings.HasPrefix(pl.Why[0], "PS on node h2, not") {
			t.Errorf("PS moved to its host h2: local %q, why %q", pl.Local, pl.Why)
		}
	})
	t.Run("OneRackForAll", func(t *testing.T) {
		pods := gangPods("rack", 2, 2, nil)
		for _, p := range pods {
			p.Spec.NodeSelector = map[string]string{gang.RackLabel: "r1"}
		}
		_, pl, err := plan(t, hosts(6, 2), pods)
		if err != nil {
			t.Fatal(err)
		}
		for uid, n := range pl.Node {
			if n != "h3" && n != "h4" {
				t.Errorf("pod %s planned on %s, outside rack r1 (h3, h4)", uid, n)
			}
		}
	})
	t.Run("HostsTooSmall", func(t *testing.T) {
		// Both 2-GPU workers pinned to one 2-GPU host: no plan, and the reason names it.
		_, _, err := plan(t, hosts(4, 2), pin(gangPods("small", 2, 2, nil), "", "h2", "h2"))
		if !errors.Is(err, gang.ErrNoFit) {
			t.Fatalf("two 2-GPU workers pinned to one 2-GPU host: %v; want ErrNoFit", err)
		}
		t.Logf("%v", err)
	})
}
