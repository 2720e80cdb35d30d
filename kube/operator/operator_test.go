package operator_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/noderunner"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/scheduler"
)

// checkWiring asserts what the operator wrote on a Ready gang: every pod has the finalizer and the
// same switch job, slots and priority cap; each pod's address is its node's, the PS's address
// and MAC are the PS node's; the switch controller holds the job as the topology derives it from
// the plan (workers in rank order, the PS's own node's worker left out), and the switches the
// job's workers hang off hold its entries. It returns the switch job id and slot base.
func (e *env) checkWiring(t *testing.T, pods []*v1.Pod, pl *gang.Plan) (id, base int) {
	t.Helper()
	id = atoi(t, pods[0].Annotations[gang.SwitchJobAnnotation])
	base = atoi(t, pods[0].Annotations[gang.SlotBaseAnnotation])
	psNode := pl.PSNode
	psPrefix := netip.MustParsePrefix(e.topo.Hosts[psNode].IP)
	byRank := make([]string, pl.WorldSize)
	var switches []string
	for _, p := range pods {
		a := p.Annotations
		if !slices.Contains(p.Finalizers, gang.Finalizer) {
			t.Errorf("pod %s has no finalizer %s", p.Name, gang.Finalizer)
		}
		for k, want := range map[string]string{gang.SwitchJobAnnotation: strconv.Itoa(id), gang.SlotBaseAnnotation: strconv.Itoa(base),
			gang.WindowAnnotation: "16", gang.PriorityCapAnnotation: strconv.Itoa(scheduler.PriorityCap(0, pl.Priority)),
			gang.PSIPAnnotation: psPrefix.Addr().String(), gang.PSMACAnnotation: e.topo.Hosts[psNode].MAC,
			gang.IPAnnotation:            netip.MustParsePrefix(e.topo.Hosts[a[gang.NodeAnnotation]].IP).Addr().String(),
			operator.InstalledAnnotation: pl.ID} {
			if a[k] != want {
				t.Errorf("pod %s: %s=%q, want %q", p.Name, k, a[k], want)
			}
		}
		lp, lw := scheduler.LocalLink(id)
		switch {
		case p.Labels[gang.RoleLabel] == gang.RolePS:
			want := "eth0"
			if pl.Local != "" {
				want = "eth0," + lp
				if len(pl.Rank) == 1 {
					want = lp
				}
			}
			if a[gang.IfaceAnnotation] != want {
				t.Errorf("PS %s: iface %q, want %q", p.Name, a[gang.IfaceAnnotation], want)
			}
			if pl.Local != "" && a[gang.LocalIfaceAnnotation] != lp {
				t.Errorf("PS %s: local iface %q, want %q", p.Name, a[gang.LocalIfaceAnnotation], lp)
			}
		case a[gang.LocalAnnotation] == "true":
			if a[gang.IfaceAnnotation] != lw || a[gang.LocalIfaceAnnotation] != lw {
				t.Errorf("local worker %s: iface %q, local iface %q, want %q", p.Name, a[gang.IfaceAnnotation], a[gang.LocalIfaceAnnotation], lw)
			}
		default:
			if a[gang.IfaceAnnotation] != "eth0" {
				t.Errorf("worker %s: iface %q, want eth0", p.Name, a[gang.IfaceAnnotation])
			}
			byRank[atoi(t, a[gang.RankAnnotation])] = a[gang.NodeAnnotation]
		}
	}
	remote := slices.DeleteFunc(slices.Clone(byRank), func(s string) bool { return s == "" })
	if len(remote) == 0 {
		return id, base
	}
	prio, ina := scheduler.PriorityCap(0, pl.Priority), pl.INA
	want, err := e.topo.DeriveJob(topology.Job{ID: id, PS: psNode, Workers: remote, PriorityCap: &prio, INA: &ina})
	kubetest.Fatal(t, err)
	want.Owner = operator.Name
	jobs, err := e.client.Jobs(e.ctx)
	kubetest.Fatal(t, err)
	i := slices.IndexFunc(jobs, func(j cpJob) bool { return j.ID == id })
	if i < 0 {
		t.Fatalf("the switch controller has no job %d (has %s)", id, dump(jobs))
	}
	if got := dump(jobs[i]); got != dump(want) {
		t.Errorf("switch job %d:\n got %s\nwant %s", id, got, dump(want))
	}
	for _, s := range want.Switches {
		switches = append(switches, s.Switch)
	}
	if got := e.onSwitches(id); !slices.Equal(got, switches) {
		t.Errorf("job %d's PS entry is on switches %v, want %v", id, got, switches)
	}
	return id, base
}

// TestInstallAndRemove: two gangs are installed with their own switch jobs, the second's slots
// away from the first's where they share a switch (the scheduler service's rule); when the first
// gang's workers succeed, its job leaves the switch controller and the switches (entries, and a
// slot it held), its PS pod is deleted and its finalizers go; the second is untouched.
func TestInstallAndRemove(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	plA := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	podsA := e.waitReady(t, "a", plA)
	idA, baseA := e.checkWiring(t, podsA, plA)
	plB := e.submit(t, kubetest.Job{Name: "b", Workers: 2, GPUsPerWorker: 2, Model: "resnet50"})
	podsB := e.waitReady(t, "b", plB)
	idB, baseB := e.checkWiring(t, podsB, plB)
	if idA != 1 || idB != 2 {
		t.Errorf("switch jobs %d and %d, want the lowest free: 1 and 2", idA, idB)
	}
	swA, swB := torsOf(e, podsA), torsOf(e, podsB)
	live := []scheduler.SlotRange{{Switches: swA, Base: baseA, Window: 16}}
	if want := scheduler.SlotBase(64, 16, swB, live); baseB != want || baseA != 0 {
		t.Errorf("slot bases %d (on %v) and %d (on %v), want 0 and %d", baseA, swA, baseB, swB, want)
	}
	t.Logf("a: switch job %d, slots %d+16 on %v; b: switch job %d, slots %d+16 on %v", idA, baseA, swA, idB, baseB, swB)

	// A chunk of a's in flight on one of its switches: removing the job must free the slot.
	held := e.switches[e.onSwitches(idA)[0]]
	held.SetSlot(baseA, model.Slot{Job: uint16(idA), Seq: 1, Count: 1, Bitmap: 1})
	for _, p := range podsA[1:] {
		e.setPhase(t, p, v1.PodSucceeded)
	}
	e.waitFor(t, "a's job removed", func() (bool, string) {
		ids := e.switchJobs(t)
		return !slices.Contains(ids, idA) && len(e.onSwitches(idA)) == 0, fmt.Sprintf("controller jobs %v", ids)
	})
	e.waitFor(t, "a's pods let go, its PS deleted", func() (bool, string) {
		for _, p := range e.pods(t, "a") {
			if slices.Contains(p.Finalizers, gang.Finalizer) {
				return false, "pod " + p.Name + " keeps the finalizer"
			}
			if p.Labels[gang.RoleLabel] == gang.RolePS && p.DeletionTimestamp == nil {
				return false, "the PS is not being deleted"
			}
		}
		return true, ""
	})
	// The operator lets go of the pods only once the controller has removed the job, slots too.
	if s := held.Slot(baseA); s.Count != 0 || s.Job != 0 {
		t.Errorf("slot %d still held after job %d was removed: %+v", baseA, idA, s)
	}
	if ids := e.switchJobs(t); !slices.Equal(ids, []int{idB}) {
		t.Errorf("controller jobs %v, want only b's %d", ids, idB)
	}
	e.checkWiring(t, e.pods(t, "b"), plB)
	e.expectEvents(t, podsA[1].Name, "INAInstalled", "INARemoved")
}

// TestEnvFromWiring: the environment Env declares resolves, as the kubelet resolves it (the node
// runner's Env), to the wiring the operator wrote on a Ready pod.
func TestEnvFromWiring(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	pods := e.waitReady(t, "a", pl)
	for _, p := range pods {
		c := v1.Container{Name: "c", Env: operator.Env()}
		env, err := noderunner.Env(p, &c, nil)
		kubetest.Fatal(t, err)
		got := map[string]string{}
		for _, v := range env {
			got[v.Name] = v.Value
		}
		a := p.Annotations
		for name, want := range map[string]string{"RANK": a[gang.RankAnnotation], "WORLD_SIZE": "2",
			"INAPACK_JOB": a[gang.SwitchJobAnnotation], "INAPACK_SLOT_BASE": a[gang.SlotBaseAnnotation], "INAPACK_WINDOW": "16",
			"INAPACK_PRIORITY": a[gang.PriorityCapAnnotation], "INAPACK_IP": a[gang.IPAnnotation], "INAPACK_IFACE": a[gang.IfaceAnnotation],
			"INAPACK_PS_IP": a[gang.PSIPAnnotation], "INAPACK_PS_MAC": a[gang.PSMACAnnotation], "INAPACK_LOCAL_IFACE": a[gang.LocalIfaceAnnotation]} {
			if got[name] != want || (want == "" && name != "INAPACK_LOCAL_IFACE" && !(name == "RANK" && p.Labels[gang.RoleLabel] == gang.RolePS)) {
				t.Errorf("pod %s: %s=%q, want %q (non-empty)", p.Name, name, got[name], want)
			}
		}
	}
}

func torsOf(e *env, pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Labels[gang.RoleLabel] == gang.RolePS || p.Annotations[gang.LocalAnnotation] == "true" {
			continue
		}
		for _, n := range e.nodes {
			if n.Name == p.Annotations[gang.NodeAnnotation] && !slices.Contains(out, n.Labels[gang.SwitchLabel]) {
				out = append(out, n.Labels[gang.SwitchLabel])
			}
		}
	}
	slices.Sort(out)
	return out
}

// expectEvents waits for the operator's events of the given reasons on a pod.
func (e *env) expectEvents(t *testing.T, pod string, reasons ...string) {
	t.Helper()
	e.waitFor(t, "events "+strings.Join(reasons, ", ")+" on "+pod, func() (bool, string) {
		evs, err := e.cs().EventsV1().Events("default").List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, ev := range evs.Items {
			if ev.Regarding.Name == pod {
				got = append(got, ev.Reason+": "+ev.Note)
			}
		}
		for _, r := range reasons {
			if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, r+":") }) {
				return false, fmt.Sprintf("events %q", got)
			}
		}
		t.Logf("events on %s: %q", pod, got)
		return true, ""
	})
}
