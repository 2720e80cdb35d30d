package gang_test

import (
	"errors"
	"maps"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inapack/inapack/kube/gang"
)

// TestPlanMembersAndResume: a gang of 1-GPU worker pods on 2-GPU nodes is planned two pods to a
// node, members 0 and 1, ranks 0..3, the PS on a node without them; the plan read back from the pods' annotations (PlanOf) is the
// plan; pods that disagree are abandoned whole while none is bound and ErrBrokenPlan once one is.
func TestPlanMembersAndResume(t *testing.T) {
	var nodes []*v1.Node
	for i := range 4 {
		n := node(i)
		n.Status.Allocatable[gang.GPUResource] = *resource.NewQuantity(2, resource.DecimalSI)
		nodes = append(nodes, n)
	}
	pods := gangPods("small", 4, 1, nil)
	key, _ := gang.KeyOf(pods[0])
	g, err := gang.Collect(key, pods, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := gang.NewView(gang.Config{}, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := v.Place(gang.Config{}, g, "small#1")
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]int{}
	ranks := map[int]bool{}
	for _, w := range g.Workers {
		members[pl.Node[w.UID]] = append(members[pl.Node[w.UID]], pl.Member[w.UID])
		ranks[pl.Rank[w.UID]] = true
	}
	for n, ms := range members {
		if len(ms) != 2 || ms[0]+ms[1] != 1 {
			t.Errorf("node %s: members %v, want 0 and 1", n, ms)
		}
	}
	if len(ranks) != 4 || pl.WorldSize != 4 {
		t.Errorf("ranks %v, world size %d: want 4 distinct of 4", ranks, pl.WorldSize)
	}
	// Only one pod could reach a PS on its node (over the node's private link): NetPack, told so
	// (PSMaxGPUs 1), puts the PS on a node with none of them (the plan's move does for the
	// baselines).
	if on := members[pl.PSNode]; len(on) > 0 || pl.Local != "" || pl.Node[g.PS.UID] != pl.PSNode || pl.Placement.PS != v.Machine[pl.PSNode] {
		t.Errorf("PS on node %s (workers there: %v, local %q, placement's PS machine %d): want a node without workers of the gang",
			pl.PSNode, on, pl.Local, pl.Placement.PS)
	}
	annotated := func() []*v1.Pod {
		var out []*v1.Pod
		for _, p := range pods {
			cp := p.DeepCopy()
			cp.Annotations = maps.Clone(cp.Annotations)
			maps.Copy(cp.Annotations, pl.Annotations(p))
			out = append(out, cp)
		}
		return out
	}
	ap := annotated()
	ga, _ := gang.Collect(key, ap, 0)
	got, err := gang.PlanOf(ga)
	if err != nil || got == nil {
		t.Fatalf("PlanOf: %v, %v", got, err)
	}
	if got.ID != pl.ID || !reflect.DeepEqual(got.Node, pl.Node) || !reflect.DeepEqual(got.Rank, pl.Rank) ||
		!reflect.DeepEqual(got.Member, pl.Member) || got.Local != pl.Local || got.PSNode != pl.PSNode || got.WorldSize != pl.WorldSize {
		t.Errorf("PlanOf %+v; planned %+v", got, pl)
	}
	ap[2].Annotations[gang.PlanAnnotation] = "small#0"
	ga, _ = gang.Collect(key, ap, 0)
	if got, err := gang.PlanOf(ga); got != nil || err != nil {
		t.Errorf("pods of two plans, none bound: %v, %v; want nil, nil (abandoned whole)", got, err)
	}
	ap[1].Spec.NodeName = ap[1].Annotations[gang.NodeAnnotation]
	ga, _ = gang.Collect(key, ap, 0)
	if _, err := gang.PlanOf(ga); !errors.Is(err, gang.ErrBrokenPlan) {
		t.Errorf("pods of two plans, one bound: %v; want ErrBrokenPlan", err)
	}
}
