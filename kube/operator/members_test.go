package operator

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
)

// planPod is a pod of a plan of three workers on the two-racks topology (PS on ps1).
func planPod(name, node string, rank int, member string) *v1.Pod {
	a := map[string]string{gang.WorldSizeAnnotation: "3", gang.NodeAnnotation: node, gang.PriorityAnnotation: "1"}
	l := map[string]string{}
	if rank < 0 {
		l[gang.RoleLabel] = gang.RolePS
	} else {
		a[gang.RankAnnotation] = strconv.Itoa(rank)
	}
	if member != "" {
		a[gang.MemberAnnotation] = member
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a, Labels: l}}
}

// Two 1-GPU workers of a gang on node h1 (members 0 and 1, as the plugin annotates them) and one
// on h3: each gets its own switch entry keyed by its member, with its rank's bit; two workers of
// one node with the same member, or a member out of range, are a clear error, not a job whose
// second worker the switch would drop.
func TestPlanMembersReachTheSwitchEntries(t *testing.T) {
	topo, err := topology.Load(filepath.Join("..", "..", "bmv2", "topologies", "two-racks", "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	pods := []*v1.Pod{planPod("ps", "ps1", -1, ""), planPod("w0", "h1", 0, "0"), planPod("w1", "h1", 1, "1"), planPod("w2", "h3", 2, "")}
	pl, err := readPlan("p1", pods)
	if err != nil {
		t.Fatal(err)
	}
	jc, err := pl.jobConfig(topo, allocation{SwitchJob: 7})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]cp.Member{}
	for _, s := range jc.Switches {
		got[s.Switch] = s.Members
	}
	want := map[string][]cp.Member{"tor1": {{Port: 1, WorkerBit: 0}, {Port: 1, Member: 1, WorkerBit: 1}}, "tor2": {{Port: 1, WorkerBit: 2}}, "spine": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("members %+v, want %+v", got, want)
	}
	// The plugin numbered h1's workers the other way round: the entries follow the pods.
	pods[1], pods[2] = planPod("w0", "h1", 0, "1"), planPod("w1", "h1", 1, "0")
	pl, err = readPlan("p1", pods)
	if err != nil {
		t.Fatal(err)
	}
	if jc, err = pl.jobConfig(topo, allocation{SwitchJob: 7}); err != nil || jc.Switches[1].Switch != "tor1" ||
		!reflect.DeepEqual(jc.Switches[1].Members, []cp.Member{{Port: 1, Member: 1, WorkerBit: 0}, {Port: 1, WorkerBit: 1}}) {
		t.Errorf("swapped members: %+v %v", jc.Switches, err)
	}
	for _, tc := range []struct{ m0, m1, want string }{
		{"0", "", "both member 0 on node h1"},
		{"", "", "both member 0 on node h1"},
		{"0", "16", "want 0..15"},
		{"x", "1", "want 0..15"},
	} {
		pods[1], pods[2] = planPod("w0", "h1", 0, tc.m0), planPod("w1", "h1", 1, tc.m1)
		if _, err := readPlan("p1", pods); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("members %q, %q: %v, want an error naming %q", tc.m0, tc.m1, err, tc.want)
		}
	}
	for _, e := range Env() {
		if e.Name == "INAPACK_MEMBER" && e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['"+gang.MemberAnnotation+"']" {
			return
		}
	}
	t.Error("Env has no INAPACK_MEMBER from " + gang.MemberAnnotation)
}

// TestMasterServiceAgreed: a plan's pods name one headless Service for torchrun's rendezvous (a
// DNS label; a pod may name none, the PS say), or none; anything else is an error that names the
// pods or the name.
func TestMasterServiceAgreed(t *testing.T) {
	for _, tc := range []struct{ ps, w0, want, err string }{
		{"", "", "", ""},
		{"j-master", "j-master", "j-master", ""},
		{"", "j-master", "j-master", ""},
		{"k-master", "j-master", "", "name different Services"},
		{"Bad_Name", "Bad_Name", "", "is no Service name"},
	} {
		pods := []*v1.Pod{planPod("ps", "ps1", -1, ""), planPod("w0", "h1", 0, "")}
		for i, s := range []string{tc.ps, tc.w0} {
			if s != "" {
				pods[i].Annotations[gang.MasterServiceAnnotation] = s
			}
		}
		pods[0].Annotations[gang.WorldSizeAnnotation], pods[1].Annotations[gang.WorldSizeAnnotation] = "1", "1"
		pl, err := readPlan("p", pods)
		switch {
		case tc.err == "" && (err != nil || pl.masterService != tc.want):
			t.Errorf("%q, %q: %v, service %q; want %q", tc.ps, tc.w0, err, pl.masterService, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q, %q: %v, want an error saying %q", tc.ps, tc.w0, err, tc.err)
		}
	}
}
