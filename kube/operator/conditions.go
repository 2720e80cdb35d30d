package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/inapack/inapack/controlplane/api"
)

// InstalledCondition is the condition the operator keeps on each pod of a plan it handles: True
// (reason Installed) once the gang's switch job is on the switch controller and the pod's wiring
// is written; False with one of the reasons below while it refuses, or cannot yet, install or
// remove it. Each False also comes as a Warning event on the pod, reason "INA" + the reason.
const InstalledCondition v1.PodConditionType = "inapack.io/SwitchJobInstalled"

// The reasons of InstalledCondition.
const (
	ReasonInstalled = "Installed"
	// ReasonRemoved: the gang ended (or was planned anew) and its switch job is gone.
	ReasonRemoved = "Removed"
	// ReasonPlanInvalid: the pods' plan annotations do not form one plan (not retried).
	ReasonPlanInvalid = "PlanInvalid"
	// ReasonTopologyUnavailable: the topology ConfigMap cannot be read or parsed.
	ReasonTopologyUnavailable = "TopologyUnavailable"
	// ReasonNotInTopology: a planned node is no host of the topology, or is cabled to no switch.
	ReasonNotInTopology = "NotInTopology"
	// ReasonNoSwitchJobFree: every switch job id is taken.
	ReasonNoSwitchJobFree = "NoSwitchJobFree"
	// ReasonControllerRejected: the switch controller answered the job with a 4xx (a bad job, a
	// wrong token).
	ReasonControllerRejected = "ControllerRejected"
	// ReasonControllerUnavailable: no answer from the switch controller, or a 5xx.
	ReasonControllerUnavailable = "ControllerUnavailable"
	// ReasonSwitchJobConflict: the controller holds the gang's switch job id as another owner's job.
	ReasonSwitchJobConflict = "SwitchJobConflict"
)

// refusal is an error the operator reports on the plan's pods (condition and event), by reason.
type refusal struct {
	reason string
	err    error
}

func (e *refusal) Error() string { return e.err.Error() }
func (e *refusal) Unwrap() error { return e.err }

func refuse(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &refusal{reason, err}
}

// controllerErr is a refusal for an error of the switch controller's API, by its status code: a
// 4xx is the controller's no, anything else (no answer, a 5xx) is the controller unavailable.
func controllerErr(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	reason := ReasonControllerUnavailable
	if c := api.StatusCode(err); c >= http.StatusBadRequest && c < http.StatusInternalServerError {
		reason = ReasonControllerRejected
	}
	return &refusal{reason, fmt.Errorf(format+": %w", append(args, err)...)}
}

// failed reports err on pods if it is a refusal (a Warning event and the condition False) and
// returns it, for a retry with backoff. Other errors (the API server's) are only returned.
func (r *reconciler) failed(ctx context.Context, pods []*v1.Pod, action, id string, err error) error {
	var rf *refusal
	if errors.As(err, &rf) {
		r.report(ctx, pods, id, v1.ConditionFalse, rf.reason, action, fmt.Sprintf("plan %s: %v", id, err))
	}
	return err
}

// report sets InstalledCondition on each pod of plan id and records an event (Warning unless the
// status is True or the reason Removed); the same on the gang's PodGroup, and in the metrics.
func (r *reconciler) report(ctx context.Context, pods []*v1.Pod, id string, status v1.ConditionStatus, reason, action, msg string) {
	r.obs.reported(ctx, pods, id, status, reason, action, msg)
	kind := v1.EventTypeWarning
	if status == v1.ConditionTrue || reason == ReasonRemoved {
		kind = v1.EventTypeNormal
	}
	for _, p := range pods {
		if kind == v1.EventTypeWarning {
			r.events.Eventf(p, nil, kind, "INA"+reason, action, "%s", msg)
		}
		if err := r.setCondition(ctx, p, status, reason, msg); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "setting the pod's condition", "pod", p.Namespace+"/"+p.Name, "reason", reason)
		}
	}
}

// setCondition patches InstalledCondition of pod p (its status), unless it already says so.
func (r *reconciler) setCondition(ctx context.Context, p *v1.Pod, status v1.ConditionStatus, reason, msg string) error {
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	since := metav1.Now()
	for _, c := range p.Status.Conditions {
		if c.Type != InstalledCondition {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return nil
		}
		if c.Status == status {
			since = c.LastTransitionTime
		}
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{{
		Type: InstalledCondition, Status: status, Reason: reason, Message: msg, LastTransitionTime: since}}}})
	if err != nil {
		return err
	}
	return r.client.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, b))
}
