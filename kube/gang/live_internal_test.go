package gang

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestLiveTombstones: a delete the informer missed reaches its handler as a tombstone
// (DeletedFinalStateUnknown, after a relist); the view forgets the pod or node all the same.
func TestLiveTombstones(t *testing.T) {
	l := NewLive(Config{})
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"}, Spec: v1.PodSpec{NodeName: "n1"}}
	l.setNode(n)
	l.setPod(p)
	l.deletePod(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p})
	l.deleteNode(cache.DeletedFinalStateUnknown{Key: "n1", Obj: n})
	if len(l.pods) != 0 || len(l.nodes) != 0 {
		t.Errorf("after tombstones: %s; want nothing", l)
	}
}
