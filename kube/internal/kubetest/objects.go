package kubetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
)

// NodesFromTopology are Node objects for the hosts of t that have GPUs: nvidia.com/gpu
// allocatable, rack and switch labels from the switch each host is cabled to, the NIC from the
// link's rate. unlabelled hosts get no rack label.
func NodesFromTopology(t *topology.Topology, unlabelled ...string) ([]*v1.Node, error) {
	var out []*v1.Node
	for _, l := range t.Links {
		for _, pair := range [][2]string{{l.A, l.B}, {l.B, l.A}} {
			h, ok := t.Hosts[pair[0]]
			if !ok || h.GPUs <= 0 {
				continue
			}
			sw, port, err := t.ParseEndpoint(pair[1])
			if err != nil {
				return nil, err
			}
			labels := map[string]string{gang.RackLabel: sw, gang.SwitchLabel: sw, gang.SwitchPortLabel: strconv.Itoa(port)}
			if slices.Contains(unlabelled, pair[0]) {
				labels = nil
			}
			ann := map[string]string{}
			if l.Mbps > 0 {
				ann[gang.NICAnnotation] = strconv.FormatFloat(l.Mbps/1000, 'g', -1, 64)
			}
			out = append(out, Node(pair[0], h.GPUs, labels, ann))
		}
	}
	slices.SortFunc(out, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Node is a ready node with gpus GPUs and room for many pods.
func Node(name string, gpus int, labels, annotations map[string]string) *v1.Node {
	rl := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("64"),
		v1.ResourceMemory: resource.MustParse("256Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
		gang.GPUResource:  *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels), Annotations: maps.Clone(annotations)},
		Status: v1.NodeStatus{Capacity: rl, Allocatable: rl,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}},
	}
}

// CreateNodes creates nodes and sets their status (the kubelet's part).
func CreateNodes(ctx context.Context, cs kubernetes.Interface, nodes []*v1.Node) error {
	for _, n := range nodes {
		st := n.Status
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		created.Status = st
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s status: %w", n.Name, err)
		}
	}
	return nil
}

// Job describes a training gang: a PS pod and Workers pods of GPUsPerWorker GPUs.
type Job struct {
	Namespace, Name string
	Workers         int
	GPUsPerWorker   int
	Model           string
	// PodGroup: a PodGroup with the gang policy links the pods; else the inapack.io/job label
	// with a min-count annotation. MinCount overrides the gang's size (a gang never complete).
	PodGroup bool
	MinCount int
	// Form, if set, links the pods as a JobSet's or a scheduler-plugins PodGroup's (forms.go;
	// PodGroup is then ignored).
	Form          gang.Form
	SchedulerName string
	// PS and Worker are the containers' command lines (nil: sleep-free placeholders that the
	// tests never run).
	PSCommand, WorkerCommand []string
	Env                      []v1.EnvVar
	// Annotations are added to every pod's (gang.MasterServiceAnnotation, say).
	Annotations map[string]string
}

// Objects are the PodGroup (nil for a label gang) and pods of j, PS first.
func (j Job) Objects() (*schedulingv1beta1.PodGroup, []*v1.Pod) {
	min := j.MinCount
	if min == 0 {
		min = j.Workers + 1
	}
	var pg *schedulingv1beta1.PodGroup
	if j.PodGroup && j.Form == gang.FormPodGroup {
		pg = &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(min)}}}}
	}
	pod := func(name, role string, gpus int, cmd []string) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: name,
				Labels:      map[string]string{gang.RoleLabel: role},
				Annotations: map[string]string{gang.ModelAnnotation: j.Model}},
			Spec: v1.PodSpec{SchedulerName: j.SchedulerName, RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: role, Image: "inapack/agents", Command: cmd, Env: j.Env}}},
		}
		if gpus > 0 {
			q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{gang.GPUResource: q},
				Limits: v1.ResourceList{gang.GPUResource: q}}
		}
		maps.Copy(p.Annotations, j.Annotations)
		if j.Form != gang.FormPodGroup {
			j.formPod(p, role == gang.RolePS)
		} else if j.PodGroup {
			name := j.Name
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
		} else {
			p.Labels[gang.JobLabel] = j.Name
			p.Annotations[gang.MinCountAnnotation] = strconv.Itoa(min)
		}
		return p
	}
	pods := []*v1.Pod{pod(j.Name+"-ps", gang.RolePS, 0, j.PSCommand)}
	for i := range j.Workers {
		pods = append(pods, pod(fmt.Sprintf("%s-worker-%d", j.Name, i), gang.RoleWorker, j.GPUsPerWorker, j.WorkerCommand))
	}
	return pg, pods
}

// Submit creates j's PodGroup and pods.
func Submit(ctx context.Context, cs kubernetes.Interface, j Job) error {
	pg, pods := j.Objects()
	if err := SubmitForm(ctx, cs, j); err != nil {
		return err
	}
	if pg != nil {
		if _, err := cs.SchedulingV1beta1().PodGroups(j.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("PodGroup %s: %w", j.Name, err)
		}
	}
	for _, p := range pods {
		if _, err := cs.CoreV1().Pods(j.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// WaitBound waits until every pod of j is bound and returns the node of each pod by name.
func WaitBound(ctx context.Context, cs kubernetes.Interface, j Job, timeout time.Duration) (map[string]string, error) {
	_, pods := j.Objects()
	nodes := map[string]string{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			cur, err := cs.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || cur.Spec.NodeName == "" {
				return false, nil
			}
			nodes[p.Name] = cur.Spec.NodeName
		}
		return true, nil
	})
	if err != nil {
		return nodes, fmt.Errorf("gang %s: %d of %d pods bound after %v", j.Name, len(nodes), len(pods), timeout)
	}
	return nodes, nil
}

// Fatal is t.Fatal for an error (nil: nothing).
func Fatal(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// WaitPending waits until a pod of j carries a PodScheduled=False condition whose message
// contains want, and returns "pod: message".
func WaitPending(ctx context.Context, cs kubernetes.Interface, j Job, want string, timeout time.Duration) (string, error) {
	_, pods := j.Objects()
	var why string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			cur, err := cs.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range cur.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && strings.Contains(c.Message, want) {
					why = p.Name + ": " + c.Message
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("gang %s: no pod pending with a reason containing %q: %w", j.Name, want, err)
	}
	return why, nil
}

// Bound lists the pods of j that are bound, as pod@node.
func Bound(ctx context.Context, cs kubernetes.Interface, j Job) ([]string, error) {
	_, pods := j.Objects()
	var bound []string
	for _, p := range pods {
		cur, err := cs.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if cur.Spec.NodeName != "" {
			bound = append(bound, p.Name+"@"+cur.Spec.NodeName)
		}
	}
	return bound, nil
}

// NoneBound fails t if any pod of j is bound: a gang that may not run (yet) binds none.
func NoneBound(ctx context.Context, t testing.TB, cs kubernetes.Interface, j Job) {
	t.Helper()
	bound, err := Bound(ctx, cs, j)
	Fatal(t, err)
	if len(bound) > 0 {
		t.Errorf("pods bound of gang %s, which may not run whole (yet): %v", j.Name, bound)
	}
}

// WaitGroupCondition waits until PodGroup ns/name carries condition typ with status and reason,
// its message containing want, and an event on the PodGroup with reason event; it returns
// "status reason: message".
func WaitGroupCondition(ctx context.Context, cs kubernetes.Interface, ns, name, typ string, status metav1.ConditionStatus, reason, want, event string, timeout time.Duration) (string, error) {
	var last, got string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pg, err := cs.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, typ)
		if c == nil {
			last = "no condition " + typ
			return false, nil
		}
		got = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		if c.Status != status || c.Reason != reason || !strings.Contains(c.Message, want) {
			last = "condition " + typ + " " + got
			return false, nil
		}
		evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == event && e.Regarding.Kind == "PodGroup" && e.Regarding.Name == name {
				return true, nil
			}
		}
		last = "no event " + event + " on the PodGroup"
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("PodGroup %s/%s: want %s=%s reason %s containing %q and event %s; last: %s", ns, name, typ, status, reason, want, event, last)
	}
	return got, nil
}

// WaitPodEvent waits for an event with reason on a pod of j whose note contains want, and
// returns "pod: note".
func WaitPodEvent(ctx context.Context, cs kubernetes.Interface, j Job, reason, want string, timeout time.Duration) (string, error) {
	_, pods := j.Objects()
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
	}
	var got string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.EventsV1().Events(j.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == reason && e.Regarding.Kind == "Pod" && names[e.Regarding.Name] && strings.Contains(e.Note, want) {
				got = e.Regarding.Name + ": " + e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("gang %s: no event %s on its pods containing %q: %w", j.Name, reason, want, err)
	}
	return got, nil
}
