package operator_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/scheduler"
)

// condition is the operator's condition on a pod (nil: none).
func condition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == operator.InstalledCondition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until every pod of gang j carries the operator's condition with status and
// reason, and returns one's message.
func (e *env) waitCondition(t *testing.T, j string, status v1.ConditionStatus, reason string) string {
	t.Helper()
	var msg string
	e.waitFor(t, fmt.Sprintf("gang %s's condition %s=%s (%s)", j, operator.InstalledCondition, status, reason), func() (bool, string) {
		for _, p := range e.pods(t, j) {
			c := condition(p)
			if c == nil || c.Status != status || c.Reason != reason {
				return false, fmt.Sprintf("pod %s: %+v", p.Name, c)
			}
			msg = c.Message
		}
		return true, ""
	})
	return msg
}

// TestControllerLostState: the switch controller comes back with no jobs (a restart without its
// state) while a gang runs; the operator adds the gang's job again, the same id and entries, and
// the switches hold them again. Meanwhile a job of the operator's owner that no gang holds is
// removed, and jobs of other owners (or none) are left alone.
func TestControllerLostState(t *testing.T) {
	e := newEnv(t)
	e.start(t)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	pods := e.waitReady(t, "a", pl)
	id, _ := e.checkWiring(t, pods, pl)
	on := e.onSwitches(id)

	e.sc.Restart(e.ctx, t)
	if ids := e.switchJobs(t); slices.Contains(ids, id) {
		t.Fatalf("the restarted controller still has job %d", id)
	}
	e.waitFor(t, "the running gang's job added again", func() (bool, string) {
		ids := e.switchJobs(t)
		return slices.Contains(ids, id) && slices.Equal(e.onSwitches(id), on), fmt.Sprintf("controller jobs %v, PS entry on %v", ids, e.onSwitches(id))
	})
	e.checkWiring(t, e.pods(t, "a"), pl)
	e.expectEvents(t, pods[1].Name, "INAReinstalled")

	// Jobs nobody's gang holds: 50 is the operator's (its pods were forced away), 51 another
	// owner's, 52 has no owner (added by hand).
	for _, j := range []struct {
		id    int
		owner string
	}{{50, operator.Name}, {51, "someone-else"}, {52, ""}} {
		jc := e.cfgJob(t, "a", pl, j.id)
		jc.Owner = j.owner
		kubetest.Fatal(t, e.client.AddJob(e.ctx, jc))
	}
	e.waitFor(t, "the operator's job that no gang holds removed", func() (bool, string) {
		ids := e.switchJobs(t)
		return !slices.Contains(ids, 50), fmt.Sprintf("controller jobs %v", ids)
	})
	time.Sleep(time.Second) // five more syncs
	if ids := e.switchJobs(t); !slices.Equal(ids, []int{id, 51, 52}) {
		t.Errorf("controller jobs %v, want the gang's %d and the others' 51 and 52", ids, id)
	}
}

// TestConflictIsOursOnlyIfOwned: an install cut short recorded switch job 9 on its pods. If the
// controller holds job 9 as the operator's (added before the operator died), the 409 is that
// job and the install completes; if it holds job 9 as another owner's, the operator refuses:
// no Ready, the condition SwitchJobConflict and an event, and the other job stays.
func TestConflictIsOursOnlyIfOwned(t *testing.T) {
	for _, owner := range []string{operator.Name, "someone-else"} {
		t.Run(owner, func(t *testing.T) {
			e := newEnv(t)
			pl := e.submit(t, kubetest.Job{Name: "c", Workers: 2, GPUsPerWorker: 2, Model: "bert-base", PodGroup: true})
			for _, p := range e.pods(t, "c") {
				p.Finalizers = append(p.Finalizers, gang.Finalizer)
				p.Annotations[operator.InstalledAnnotation] = pl.ID
				p.Annotations[gang.SwitchJobAnnotation] = "9"
				p.Annotations[gang.SlotBaseAnnotation] = "32"
				p.Annotations[gang.WindowAnnotation] = "16"
				_, err := e.cs().CoreV1().Pods("default").Update(e.ctx, p, metav1.UpdateOptions{})
				kubetest.Fatal(t, err)
			}
			// Job 9 as the topology derives it for this plan: what the dead operator had added.
			jc := e.cfgJob(t, "c", pl, 9)
			jc.Owner = owner
			kubetest.Fatal(t, e.client.AddJob(e.ctx, jc))
			e.start(t)
			if owner == operator.Name {
				pods := e.waitReady(t, "c", pl)
				if id, _ := e.checkWiring(t, pods, pl); id != 9 {
					t.Errorf("switch job %d, want the recorded 9", id)
				}
				e.waitCondition(t, "c", v1.ConditionTrue, operator.ReasonInstalled)
				return
			}
			time.Sleep(3 * time.Second) // time to install, were it allowed
			for _, p := range e.pods(t, "c") {
				if p.Annotations[gang.ReadyAnnotation] != "" {
					t.Errorf("pod %s Ready though its switch job is another's", p.Name)
				}
			}
			msg := e.waitCondition(t, "c", v1.ConditionFalse, operator.ReasonSwitchJobConflict)
			e.expectEvents(t, "c-ps", "INA"+operator.ReasonSwitchJobConflict)
			jobs, err := e.client.Jobs(e.ctx)
			kubetest.Fatal(t, err)
			if len(jobs) != 1 || jobs[0].Owner != owner {
				t.Errorf("controller jobs %s, want only %s's job 9", dump(jobs), owner)
			}
			t.Logf("refused: %s", msg)
		})
	}
}

// cfgJob is the switch job the topology derives for a plan's placement (its pods' annotations)
// under id, as checkWiring expects it.
func (e *env) cfgJob(t *testing.T, j string, pl *gang.Plan, id int) cpJob {
	t.Helper()
	byRank := make([]string, pl.WorldSize)
	for _, p := range e.pods(t, j) {
		a := p.Annotations
		if p.Labels[gang.RoleLabel] != gang.RolePS && a[gang.LocalAnnotation] != "true" {
			byRank[atoi(t, a[gang.RankAnnotation])] = a[gang.NodeAnnotation]
		}
	}
	remote := slices.DeleteFunc(byRank, func(s string) bool { return s == "" })
	prio, ina := scheduler.PriorityCap(0, pl.Priority), pl.INA
	jc, err := e.topo.DeriveJob(topology.Job{ID: id, PS: pl.PSNode, Workers: remote, PriorityCap: &prio, INA: &ina})
	kubetest.Fatal(t, err)
	return *jc
}

// downable is a TCP proxy to the switch controller's API on a port whose number contains "404",
// so that every error of a request that never reached the API quotes "404"; Down closes it (a
// controller down: connection refused), Up listens again on the same port.
type downable struct {
	addr, target string
	mu           sync.Mutex
	lis          net.Listener
	conns        []net.Conn
}

func newDownable(t *testing.T, target string) *downable {
	t.Helper()
	d := &downable{target: strings.TrimPrefix(target, "http://")}
	for _, port := range []int{40400, 40401, 40402, 40403, 40404, 40405, 40406, 40407, 40408, 40409, 14040, 24040, 34040, 44040} {
		d.addr = "127.0.0.1:" + strconv.Itoa(port)
		if d.Up() == nil {
			t.Cleanup(d.Down)
			return d
		}
	}
	t.Skip("no free loopback port with 404 in its number (40400-40409, 14040, 24040, 34040, 44040)")
	return nil
}

func (d *downable) Up() error {
	lis, err := net.Listen("tcp", d.addr)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.lis = lis
	d.mu.Unlock()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", d.target)
			if err != nil {
				c.Close()
				continue
			}
			d.mu.Lock()
			d.conns = append(d.conns, c, u)
			d.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return nil
}

func (d *downable) Down() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lis != nil {
		d.lis.Close()
		d.lis = nil
	}
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// TestControllerDownKeepsFinalizers: the switch controller is down (connection refused, on a
// port whose number contains 404) when a gang ends. The operator keeps the gang's finalizers and
// its PS, says why on the pods (condition ControllerUnavailable and an event), and retries with a
// delay capped at MaxRetryDelay (1s here): once the controller is back after 10 s of failures
// the job is removed within 3 s (controller-runtime's own backoff would wait about as long again
// as it has failed). A real 404 (the controller lost the job) counts as removed.
func TestControllerDownKeepsFinalizers(t *testing.T) {
	e := newEnv(t)
	proxy := newDownable(t, e.sc.URL)
	e.cfg.Controller = api.NewClient(proxy.addr, token)
	e.cfg.SyncInterval = time.Hour // no re-adding behind the test's back: this is about removal
	e.start(t)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	pods := e.waitReady(t, "a", pl)
	id, _ := e.checkWiring(t, pods, pl)

	proxy.Down()
	for _, p := range pods[1:] {
		e.setPhase(t, p, v1.PodSucceeded)
	}
	time.Sleep(10 * time.Second)
	for _, p := range e.pods(t, "a") {
		if !slices.Contains(p.Finalizers, gang.Finalizer) || (p.Name == pods[0].Name && p.DeletionTimestamp != nil) {
			t.Fatalf("with the controller down, pod %s: finalizers %v, deleting %v", p.Name, p.Finalizers, p.DeletionTimestamp != nil)
		}
	}
	if ids := e.switchJobs(t); !slices.Equal(ids, []int{id}) {
		t.Fatalf("controller jobs %v while it was unreachable, want %d", ids, id)
	}
	msg := e.waitCondition(t, "a", v1.ConditionFalse, operator.ReasonControllerUnavailable)
	e.expectEvents(t, pods[0].Name, "INA"+operator.ReasonControllerUnavailable)
	if !strings.Contains(msg, "404") || !strings.Contains(msg, "connection refused") {
		t.Errorf("the condition's message %q should quote the refused request (and its 404)", msg)
	}
	kubetest.Fatal(t, proxy.Up())
	back := time.Now()
	e.waitFor(t, "the job removed once the controller is back", func() (bool, string) {
		return len(e.switchJobs(t)) == 0, fmt.Sprintf("controller jobs %v", e.switchJobs(t))
	})
	if d := time.Since(back); d > 3*time.Second {
		t.Errorf("the job was removed %v after the controller came back, want under 3s (retry delay capped at 1s)", d)
	} else {
		t.Logf("removed %v after the controller came back", d.Round(time.Millisecond))
	}
	e.waitFor(t, "the gang let go", func() (bool, string) {
		for _, p := range e.pods(t, "a") {
			if slices.Contains(p.Finalizers, gang.Finalizer) {
				return false, "pod " + p.Name + " keeps the finalizer"
			}
		}
		return true, ""
	})

	// A real 404: the controller lost gang b's job; when b ends, its pods are let go.
	plB := e.submit(t, kubetest.Job{Name: "b", Workers: 2, GPUsPerWorker: 2, Model: "resnet50"})
	podsB := e.waitReady(t, "b", plB)
	idB := atoi(t, podsB[0].Annotations[gang.SwitchJobAnnotation])
	kubetest.Fatal(t, e.client.RemoveJob(e.ctx, idB))
	for _, p := range podsB[1:] {
		e.setPhase(t, p, v1.PodSucceeded)
	}
	e.waitFor(t, "gang b let go after the controller's 404", func() (bool, string) {
		for _, p := range e.pods(t, "b") {
			if slices.Contains(p.Finalizers, gang.Finalizer) {
				return false, "pod " + p.Name + " keeps the finalizer"
			}
		}
		return true, ""
	})
}

// TestRefusalsAreConditions: a plan on a node the topology ConfigMap does not list, and a job the
// switch controller rejects (a 400), each leave the gang's pods with the condition False, the
// reason, and a Warning event, and no Ready; once the cause is gone (the ConfigMap fixed, the
// controller accepting) the operator's retries install the gang and the condition turns True.
func TestRefusalsAreConditions(t *testing.T) {
	e := newEnv(t)
	pl := e.submit(t, kubetest.Job{Name: "a", Workers: 2, GPUsPerWorker: 2, Model: "vgg16", PodGroup: true})
	// The topology without the PS's node: its host and its link.
	cm, err := e.cs().CoreV1().ConfigMaps("inapack-system").Get(e.ctx, "topology", metav1.GetOptions{})
	kubetest.Fatal(t, err)
	whole := cm.Data["topology.json"]
	var raw map[string]any
	kubetest.Fatal(t, json.Unmarshal([]byte(whole), &raw))
	delete(raw["hosts"].(map[string]any), pl.PSNode)
	raw["links"] = slices.DeleteFunc(raw["links"].([]any), func(l any) bool { return l.([]any)[0] == pl.PSNode })
	b, err := json.Marshal(raw)
	kubetest.Fatal(t, err)
	cm.Data["topology.json"] = string(b)
	cm, err = e.cs().CoreV1().ConfigMaps("inapack-system").Update(e.ctx, cm, metav1.UpdateOptions{})
	kubetest.Fatal(t, err)

	e.start(t)
	msg := e.waitCondition(t, "a", v1.ConditionFalse, operator.ReasonNotInTopology)
	e.expectEvents(t, "a-ps", "INA"+operator.ReasonNotInTopology)
	if !strings.Contains(msg, pl.PSNode) {
		t.Errorf("the condition's message %q does not name node %s", msg, pl.PSNode)
	}
	cm.Data["topology.json"] = whole
	_, err = e.cs().CoreV1().ConfigMaps("inapack-system").Update(e.ctx, cm, metav1.UpdateOptions{})
	kubetest.Fatal(t, err)
	e.checkWiring(t, e.waitReady(t, "a", pl), pl)
	e.waitCondition(t, "a", v1.ConditionTrue, operator.ReasonInstalled)

	// The controller says no to every new job.
	reject := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				api.WriteJSON(w, http.StatusBadRequest, api.Error{Error: "jobs[0].switches[0]: rejected by the test"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	e.sc.Wrap(reject, nil)
	plB := e.submit(t, kubetest.Job{Name: "b", Workers: 2, GPUsPerWorker: 2, Model: "resnet50"})
	msg = e.waitCondition(t, "b", v1.ConditionFalse, operator.ReasonControllerRejected)
	e.expectEvents(t, "b-ps", "INA"+operator.ReasonControllerRejected)
	if !strings.Contains(msg, "400") || !strings.Contains(msg, "rejected by the test") {
		t.Errorf("the condition's message %q does not give the controller's answer", msg)
	}
	for _, p := range e.pods(t, "b") {
		if p.Annotations[gang.ReadyAnnotation] != "" {
			t.Errorf("pod %s Ready though the controller rejected its job", p.Name)
		}
	}
	e.sc.Wrap(func(h http.Handler) http.Handler { return h }, nil)
	e.checkWiring(t, e.waitReady(t, "b", plB), plB)
	e.waitCondition(t, "b", v1.ConditionTrue, operator.ReasonInstalled)
}
