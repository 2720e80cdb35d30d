package gang_test

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inapack/inapack/kube/gang"
)

// TestViewCacheEqualsNewView: a cached View is NewView's for the same nodes and pods: as the pods
// change (a gang bound, a pod of no gang taking GPUs), as a node is updated (its GPUs change) and
// as a node goes.
func TestViewCacheEqualsNewView(t *testing.T) {
	cfg := gang.Config{}.WithDefaults()
	s := newSynthetic(64)
	cache := &gang.ViewCache{}
	check := func(what string, nodes []*v1.Node, assigned []*v1.Pod) {
		t.Helper()
		want, err := gang.NewView(cfg, nodes, assigned)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cache.View(cfg, nodes, assigned)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Cluster, want.Cluster) || !reflect.DeepEqual(got.Nodes, want.Nodes) ||
			!reflect.DeepEqual(got.Running, want.Running) || !reflect.DeepEqual(got.Unlabelled, want.Unlabelled) {
			t.Errorf("%s: the cached view differs from NewView's", what)
		}
	}
	check("first", s.nodes, s.assigned)
	check("again", s.nodes, s.assigned)
	bound := append(s.assigned, gangPods("new", 2, gpusPerNode, []string{"n00016", "n00016", "n00017"})...)
	check("a gang bound", s.nodes, bound)
	other := gangPods("other", 1, 3, []string{"", "n00020"})[1]
	delete(other.Labels, gang.JobLabel)
	check("a pod of no gang", s.nodes, append(bound, other))
	moved := slices.Clone(bound)
	i := len(moved) - 1
	moved[i] = moved[i].DeepCopy()
	moved[i].Spec.NodeName = "n00018"
	check("a gang's pod updated", s.nodes, append(moved, other))
	check("a gang's pod gone", s.nodes, moved[:i])
	slices.Reverse(moved)
	check("the pods in another order", s.nodes, moved)
	nodes := append([]*v1.Node(nil), s.nodes...)
	nodes[20] = nodes[20].DeepCopy()
	nodes[20].Status.Allocatable[gang.GPUResource] = *resource.NewQuantity(4, resource.DecimalSI)
	check("a node's GPUs changed", nodes, append(bound, other))
	check("a node gone", nodes[:63], bound)
}
