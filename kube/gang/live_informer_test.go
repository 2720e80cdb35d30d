package gang_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/inapack/inapack/kube/gang"
)

// TestLiveFollowsInformers: a Live registered on a node and a pod informer (of a fake API) comes
// to NewView of the informers' objects after each change made through the API: pods bound,
// deleted, a node deleted. Without the handlers' delete events the deleted objects stay counted.
func TestLiveFollowsInformers(t *testing.T) {
	s := newSynthetic(32)
	var objs []runtime.Object
	for _, n := range s.nodes {
		objs = append(objs, n)
	}
	for _, p := range s.assigned {
		objs = append(objs, p)
	}
	cs := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(cs, 0)
	live := gang.NewLive(gang.Config{})
	nodes, pods := f.Core().V1().Nodes(), f.Core().V1().Pods()
	if err := live.Register(nodes.Informer(), pods.Informer()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	// settle waits for the informers to hold wantNodes and wantPods (the API's changes reach them
	// later than the calls return), then for the view to be NewView's of them.
	settle := func(what string, wantNodes, wantPods int) {
		t.Helper()
		var diff string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			if !live.Synced() {
				return false, nil
			}
			ns, _ := nodes.Lister().List(labels.Everything())
			ps, _ := pods.Lister().List(labels.Everything())
			if len(ns) != wantNodes || len(ps) != wantPods {
				diff = fmt.Sprintf("the informers hold %d nodes and %d pods", len(ns), len(ps))
				return false, nil
			}
			var assigned []*v1.Pod
			for _, p := range ps {
				if p.Spec.NodeName != "" {
					assigned = append(assigned, p)
				}
			}
			want, err := gang.NewView(gang.Config{}, ns, assigned)
			if err != nil {
				return false, err
			}
			got, err := live.View(nil)
			if err != nil {
				return false, err
			}
			if reflect.DeepEqual(got.Cluster, want.Cluster) && reflect.DeepEqual(got.Running, want.Running) && reflect.DeepEqual(got.Nodes, want.Nodes) {
				return true, nil
			}
			diff = live.String()
			return false, nil
		})
		if err != nil {
			t.Fatalf("%s: the live view never came to NewView's (%s): %v", what, diff, err)
		}
	}
	settle("synced", 32, len(s.assigned))
	api := cs.CoreV1()
	pending := gangPods("new", 2, gpusPerNode, nil)
	for _, p := range pending {
		if _, err := api.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	settle("a gang pending", 32, len(s.assigned)+3)
	for i, p := range pending { // bound: an update of each pod
		p = p.DeepCopy()
		p.Spec.NodeName = []string{"n00016", "n00016", "n00017"}[i]
		if _, err := api.Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	settle("a gang bound", 32, len(s.assigned)+3)
	for _, p := range append(pending, s.assigned[:3]...) {
		if err := api.Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	settle("two gangs deleted", 32, len(s.assigned)-3)
	if err := api.Nodes().Delete(ctx, "n00031", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle("a node deleted", 31, len(s.assigned)-3)
}
