package gang

import (
	"context"
	"encoding/json"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// ReasonPodRefused is the reason of a refused gang's pod condition (PodScheduled=False) and of
// the Warning event on the pod.
const ReasonPodRefused = "NetPackGangRefused"

// Recorder makes a gang's outcome visible where its user looks, for the scheduler plugin and the
// extender alike: a refusal as a PodScheduled=False condition (ReasonPodRefused) and a Warning
// event on the pod, and a gang's PlannedCondition on its PodGroup with an event on the PodGroup
// (NetPack + the reason) at each change. Every write is off the caller's path (the plugin's
// PreEnqueue runs under the scheduling queue's lock, the extender's filter inside
// kube-scheduler's call) and made once per change: the latest per pod and per gang.
type Recorder struct {
	cs        kubernetes.Interface
	events    events.EventRecorder
	podGroups bool // the API server serves PodGroups

	refusedMu sync.Mutex
	refused   map[types.UID]string // the last refusal written onto each pod

	mu      sync.Mutex
	want    map[Key]metav1.Condition // the latest condition wanted per gang, not written yet
	written map[Key]metav1.Condition
	write   sync.Mutex // one PodGroup writer at a time
}

// NewRecorder writes with cs and rec; podGroups says whether the API server serves PodGroups
// (PodGroups.Enabled): a label gang, or every gang without them, has no PodGroup to write.
func NewRecorder(cs kubernetes.Interface, rec events.EventRecorder, podGroups bool) *Recorder {
	return &Recorder{cs: cs, events: rec, podGroups: podGroups, refused: map[types.UID]string{},
		want: map[Key]metav1.Condition{}, written: map[Key]metav1.Condition{}}
}

// Refuse records why pod's gang can never run as written: the pod's condition and event, and the
// gang's PodGroup condition (GangRefused). A pod refused again for the same reason is not
// written again.
func (r *Recorder) Refuse(ctx context.Context, pod *v1.Pod, why string) {
	r.refusedMu.Lock()
	if r.refused[pod.UID] == why {
		r.refusedMu.Unlock()
		return
	}
	if len(r.refused) >= 10000 {
		r.refused = map[types.UID]string{} // deleted pods' entries; a pod still refused gets one more write
	}
	r.refused[pod.UID] = why
	r.refusedMu.Unlock()
	if key, ok := KeyOf(pod); ok {
		r.Planned(ctx, key, metav1.ConditionFalse, ReasonGangRefused, why)
	}
	r.events.Eventf(pod, nil, v1.EventTypeWarning, ReasonPodRefused, "Scheduling", "%s", why)
	go func() {
		cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: ReasonPodRefused, Message: why,
			LastTransitionTime: metav1.Now()}
		// A strategic merge patch keyed by type: the pod's other conditions stay.
		b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{cond}}})
		if err == nil {
			_, err = r.cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status")
		}
		if err != nil {
			klog.FromContext(ctx).Info("NetPack: writing a gang's refusal onto its pod", "pod", klog.KObj(pod), "err", err)
		}
	}()
}

// Planned records gang key's plan (status True, ReasonPlanned) or why it has none (False,
// ReasonGangRefused or ReasonNoFit) as its PodGroup's PlannedCondition, with an event on the
// PodGroup when the condition changes. A label gang has no PodGroup: nothing is written.
func (r *Recorder) Planned(ctx context.Context, key Key, status metav1.ConditionStatus, reason, msg string) {
	if key.ByLabel || key.Form != FormPodGroup || !r.podGroups {
		return
	}
	cond := metav1.Condition{Type: PlannedCondition, Status: status, Reason: reason, Message: msg}
	r.mu.Lock()
	if len(r.written) >= 10000 {
		r.want, r.written = map[Key]metav1.Condition{}, map[Key]metav1.Condition{} // deleted gangs' entries
	}
	if w, ok := r.written[key]; ok && w == cond {
		r.mu.Unlock()
		return
	}
	r.want[key] = cond
	r.mu.Unlock()
	go func() {
		r.write.Lock()
		defer r.write.Unlock()
		r.mu.Lock()
		cond, ok := r.want[key]
		delete(r.want, key)
		r.mu.Unlock()
		if !ok {
			return // an earlier writer wrote the latest
		}
		pg, wrote, err := SetPodGroupCondition(ctx, r.cs, key, cond)
		if err != nil {
			klog.FromContext(ctx).Info("NetPack: writing a gang's condition onto its PodGroup", "gang", key.String(), "err", err)
			return
		}
		r.mu.Lock()
		r.written[key] = cond
		r.mu.Unlock()
		if wrote {
			kind := v1.EventTypeWarning
			if cond.Status == metav1.ConditionTrue {
				kind = v1.EventTypeNormal
			}
			r.events.Eventf(pg, nil, kind, "NetPack"+cond.Reason, "Scheduling", "%s", cond.Message)
		}
	}()
}
