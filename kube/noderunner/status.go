package noderunner

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// running reports the pod Running, its container started and ready.
func (r *Runner) running(ctx context.Context, pod *v1.Pod, p *proc) error {
	return r.status(ctx, pod, func(st *v1.PodStatus) {
		st.Phase = v1.PodRunning
		st.StartTime = &p.started
		st.ContainerStatuses = []v1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
			Ready: true, Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: p.started}}}}
		setConditions(st, v1.ConditionTrue)
	})
}

// finish reports the pod ended: Succeeded for exit code 0, else Failed with the code; p nil is a
// pod that could not start, for the reason given.
func (r *Runner) finish(ctx context.Context, pod *v1.Pod, p *proc, reason string) error {
	return r.status(ctx, pod, func(st *v1.PodStatus) {
		name := "container"
		if len(pod.Spec.Containers) > 0 {
			name = pod.Spec.Containers[0].Name
		}
		now := metav1.Now()
		t := &v1.ContainerStateTerminated{ExitCode: 128, Reason: "ContainerCannotRun", Message: reason, FinishedAt: now, StartedAt: now}
		if p != nil {
			t.ExitCode, t.StartedAt = int32(p.code), p.started
			switch {
			case p.code == 0:
				t.Reason = "Completed"
			case p.killed:
				t.Reason, t.Message = "Killed", "killed by the node runner: the pod was deleted"
			default:
				t.Reason, t.Message = "Error", tail(p.log)
			}
		}
		st.Phase = v1.PodFailed
		if p != nil && p.code == 0 {
			st.Phase = v1.PodSucceeded
		}
		st.Reason, st.Message = t.Reason, t.Message
		st.ContainerStatuses = []v1.ContainerStatus{{Name: name, Started: ptr.To(false),
			State: v1.ContainerState{Terminated: t}}}
		if len(pod.Spec.Containers) > 0 {
			st.ContainerStatuses[0].Image = pod.Spec.Containers[0].Image
		}
		setConditions(st, v1.ConditionFalse)
	})
}

// setConditions sets the pod's Initialized, ContainersReady and Ready conditions (ready: the
// latter two's status).
func setConditions(st *v1.PodStatus, ready v1.ConditionStatus) {
	now := metav1.Now()
	for _, c := range []struct {
		t v1.PodConditionType
		s v1.ConditionStatus
	}{{v1.PodInitialized, v1.ConditionTrue}, {v1.ContainersReady, ready}, {v1.PodReady, ready}} {
		found := false
		for i := range st.Conditions {
			if st.Conditions[i].Type == c.t {
				found = true
				if st.Conditions[i].Status != c.s {
					st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = c.s, now
				}
			}
		}
		if !found {
			st.Conditions = append(st.Conditions, v1.PodCondition{Type: c.t, Status: c.s, LastTransitionTime: now})
		}
	}
}

// status applies edit to the pod's latest status and writes it (retried on conflicts).
func (r *Runner) status(ctx context.Context, pod *v1.Pod, edit func(*v1.PodStatus)) error {
	pods := r.cs.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil // replaced meanwhile
		}
		edit(&cur.Status)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// clientLookup reads ConfigMap and Secret keys from the API server (a missing object is a
// missing key, as the kubelet treats an optional reference).
type clientLookup struct{ cs kubernetes.Interface }

func (l clientLookup) ConfigMapKey(ns, name, key string) (string, bool, error) {
	cm, err := l.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	v, ok := cm.Data[key]
	return v, ok, nil
}

func (l clientLookup) SecretKey(ns, name, key string) (string, bool, error) {
	s, err := l.cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	v, ok := s.Data[key]
	return string(v), ok, nil
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
