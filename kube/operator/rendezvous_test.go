package operator_test

import (
	"fmt"
	"maps"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/noderunner"
	"github.com/inapack/inapack/kube/operator"
)

// nodeIP gives each node an InternalIP, 192.0.2.<i+1> in node order, as a kubelet reports it.
func (e *env) nodeIPs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, n := range e.nodes {
		cur, err := e.cs().CoreV1().Nodes().Get(e.ctx, n.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		ip := fmt.Sprintf("192.0.2.%d", i+1)
		cur.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: n.Name}, {Type: v1.NodeInternalIP, Address: ip}}
		_, err = e.cs().CoreV1().Nodes().UpdateStatus(e.ctx, cur, metav1.UpdateOptions{})
		kubetest.Fatal(t, err)
		out[n.Name] = ip
	}
	return out
}

// torchEnv is a pod's environment as the kubelet resolves operator.Env (the node runner's Env).
func torchEnv(t *testing.T, p *v1.Pod) map[string]string {
	t.Helper()
	c := v1.Container{Name: "c", Env: operator.Env()}
	env, err := noderunner.Env(p, &c, nil)
	kubetest.Fatal(t, err)
	got := map[string]string{}
	for _, v := range env {
		got[v.Name] = v.Value
	}
	return got
}

// waitInstalled waits for a gang's pods to be Ready for plan id, and leaves them unbound.
func (e *env) waitInstalled(t *testing.T, j, id string) []*v1.Pod {
	t.Helper()
	var pods []*v1.Pod
	e.waitFor(t, "gang "+j+" Ready for "+id, func() (bool, string) {
		pods = e.pods(t, j)
		for _, p := range pods {
			if p.Annotations[gang.ReadyAnnotation] != id {
				return false, "pod " + p.Name + " not Ready"
			}
		}
		return true, ""
	})
	return pods
}

// rank0 is the plan's rank 0 worker pod.
func rank0(t *testing.T, pods []*v1.Pod) *v1.Pod {
	t.Helper()
	for _, p := range pods {
		if p.Labels[gang.RoleLabel] != gang.RolePS && p.Annotations[gang.RankAnnotation] == "0" {
			return p
		}
	}
	t.Fatal("no pod of rank 0")
	return nil
}

// TestRendezvous: what torchrun needs, one agent per pod, from the plan. Every pod of a gang
// resolves NODE_RANK to its rank (the switch's worker bit), NNODES to the workers, MASTER_PORT
// to the operator's base plus the gang's switch job id (two live gangs: two ports) and
// MASTER_ADDR to rank 0's node's InternalIP, or, for a gang that names a headless Service, to
// that Service, which selects rank 0's pod alone by the label the operator puts on it, moved
// when a new plan makes another pod rank 0. A Service name that is no DNS label, or pods naming
// different Services, refuse the plan (PlanInvalid) instead of wiring pods that cannot meet.
func TestRendezvous(t *testing.T) {
	e := newEnv(t)
	ips := e.nodeIPs(t)
	e.cfg.MasterPortBase = 31000
	e.start(t)

	plA := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	podsA := e.waitReady(t, "a", plA)
	idA := atoi(t, podsA[0].Annotations[gang.SwitchJobAnnotation])
	addrA := ips[rank0(t, podsA).Annotations[gang.NodeAnnotation]]
	svc := "b-master"
	plB := e.submit(t, kubetest.Job{Name: "b", Workers: 3, GPUsPerWorker: 2, Model: "resnet50", PodGroup: true,
		Annotations: map[string]string{gang.MasterServiceAnnotation: svc}})
	podsB := e.waitInstalled(t, "b", plB.ID) // unbound: the plugin may yet plan it anew
	idB := atoi(t, podsB[0].Annotations[gang.SwitchJobAnnotation])
	if idA == idB {
		t.Fatalf("both gangs have switch job %d", idA)
	}
	for _, g := range []struct {
		pods      []*v1.Pod
		id, n     int
		addr, svc string
	}{{podsA, idA, 2, addrA, ""}, {podsB, idB, 3, svc + ".default.svc", svc}} {
		for _, p := range g.pods {
			env := torchEnv(t, p)
			want := map[string]string{"NNODES": strconv.Itoa(g.n), "MASTER_ADDR": g.addr, "MASTER_PORT": strconv.Itoa(31000 + g.id),
				"NODE_RANK": p.Annotations[gang.RankAnnotation]}
			for k, v := range want {
				if env[k] != v || (v == "" && p.Labels[gang.RoleLabel] != gang.RolePS) {
					t.Errorf("pod %s: %s=%q, want %q (non-empty)", p.Name, k, env[k], v)
				}
			}
			wantLabel := ""
			if g.svc != "" && p.Name == rank0(t, g.pods).Name {
				wantLabel = g.svc
			}
			if p.Labels[gang.MasterLabel] != wantLabel {
				t.Errorf("pod %s: label %s=%q, want %q", p.Name, gang.MasterLabel, p.Labels[gang.MasterLabel], wantLabel)
			}
		}
	}
	t.Logf("a: MASTER_ADDR %s, MASTER_PORT %d; b: MASTER_ADDR %s.default.svc, MASTER_PORT %d", addrA, 31000+idA, svc, 31000+idB)

	// b planned anew with the ranks of the workers that reach the PS through the switch (all
	// but the last, where one is on the PS's node) turned round: the label follows rank 0.
	again := *plB
	again.ID = plB.ID + "-2"
	again.Rank = maps.Clone(plB.Rank)
	remote := plB.WorldSize
	if plB.Local != "" {
		remote--
	}
	for uid, r := range plB.Rank {
		if r < remote {
			again.Rank[uid] = (r + 1) % remote
		}
	}
	was := rank0(t, podsB).Name
	for _, p := range podsB {
		kubetest.Fatal(t, gang.Annotate(e.ctx, e.cs(), p, again.Annotations(p)))
	}
	podsB = e.waitInstalled(t, "b", again.ID)
	now := rank0(t, podsB)
	labelled := 0
	for _, p := range podsB {
		if p.Labels[gang.MasterLabel] != "" {
			labelled++
		}
	}
	if now.Name == was || now.Labels[gang.MasterLabel] != svc || labelled != 1 {
		t.Errorf("after the re-plan rank 0 is %s (was %s), labelled %q, %d pods labelled; want the other pod, alone labelled %q",
			now.Name, was, now.Labels[gang.MasterLabel], labelled, svc)
	}

	// A Service name that is no DNS label: refused, with the reason on the pods, nothing on the
	// switches. (Pods naming different Services: TestMasterServiceAgreed.)
	j := kubetest.Job{Name: "c", Workers: 1, GPUsPerWorker: 1, Model: "resnet50", PodGroup: true,
		Annotations: map[string]string{gang.MasterServiceAnnotation: "C_master"}}
	e.submit(t, j)
	_, pods := j.Objects()
	e.waitFor(t, "c refused", func() (bool, string) {
		p, err := e.cs().CoreV1().Pods("default").Get(e.ctx, pods[1].Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == operator.InstalledCondition && c.Reason == operator.ReasonPlanInvalid {
				t.Logf("c: %s", c.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})
	if ids := e.switchJobs(t); len(ids) != 2 {
		t.Errorf("controller jobs %v: want a's and b's only", ids)
	}

	// Nodes that report no InternalIP, and a gang that names no Service: installed all the same,
	// MASTER_ADDR left out, and a Warning event says why.
	for _, n := range e.nodes {
		cur, err := e.cs().CoreV1().Nodes().Get(e.ctx, n.Name, metav1.GetOptions{})
		kubetest.Fatal(t, err)
		cur.Status.Addresses = nil
		_, err = e.cs().CoreV1().Nodes().UpdateStatus(e.ctx, cur, metav1.UpdateOptions{})
		kubetest.Fatal(t, err)
	}
	plD := e.submit(t, kubetest.Job{Name: "d", Workers: 1, GPUsPerWorker: 1, Model: "resnet50", PodGroup: true})
	podsD := e.waitInstalled(t, "d", plD.ID)
	for _, p := range podsD {
		if a, ok := p.Annotations[gang.MasterAddrAnnotation]; ok || p.Annotations[gang.MasterPortAnnotation] == "" {
			t.Errorf("pod %s: master-addr %q (want none), master-port %q", p.Name, a, p.Annotations[gang.MasterPortAnnotation])
		}
	}
	e.expectEvents(t, podsD[1].Name, "INAMasterAddrUnknown", "INAInstalled")
}
