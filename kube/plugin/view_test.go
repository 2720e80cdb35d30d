package plugin

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/kube/gang"
)

// TestReserveCountsInTheView: the plugin's Reserve puts a pod on its node in the live view before
// the API binds it (the framework's snapshot has it assumed; the view must too, or the next gang
// is planned onto the same GPUs), and Unreserve takes it off.
func TestReserveCountsInTheView(t *testing.T) {
	live := gang.NewLive(gang.Config{})
	for _, name := range []string{"n1", "n2"} {
		live.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{gang.RackLabel: "r1"}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{gang.GPUResource: *resource.NewQuantity(8, resource.DecimalSI)}}})
	}
	p := &NetPack{live: live, plans: map[gang.Key]*attempt{}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "solo", UID: "solo"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{gang.GPUResource: *resource.NewQuantity(4, resource.DecimalSI)}}}}}}
	free := func() int {
		t.Helper()
		v, err := live.View(nil)
		if err != nil {
			t.Fatal(err)
		}
		return v.Cluster.Machines[v.Machine["n1"]].GPUs
	}
	if st := p.Reserve(context.Background(), nil, pod, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := free(); got != 4 {
		t.Errorf("n1 has %d GPUs free with a 4-GPU pod reserved there; want 4", got)
	}
	p.Unreserve(context.Background(), nil, pod, "n1")
	if got := free(); got != 8 {
		t.Errorf("n1 has %d GPUs free after the pod's Unreserve; want 8", got)
	}
}
