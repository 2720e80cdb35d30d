package gang

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// The conditions INAPack keeps on a gang's PodGroup (status.conditions), besides those on its
// pods: a user reading the PodGroup sees where the gang stands without reading each pod.
const (
	// PlannedCondition is the scheduler plugin's: True (reason Planned) once NetPack has a plan
	// for the gang, False while it refuses the gang (reason GangRefused: the gang itself is
	// wrong, e.g. no PS or an unknown model; NoFit: the cluster has no room for it now).
	PlannedCondition = "inapack.io/Planned"
	// SwitchJobInstalledCondition is the operator's, with the reasons of the pods' condition of
	// the same name (operator.InstalledCondition).
	SwitchJobInstalledCondition = "inapack.io/SwitchJobInstalled"

	ReasonPlanned     = "Planned"
	ReasonGangRefused = "GangRefused"
	ReasonNoFit       = "NoFit"
)

// SetPodGroupCondition sets cond on the status of gang key's PodGroup, leaving its other
// conditions, unless the PodGroup already says the same (status, reason, message); the
// transition time stays while the status does. It returns the PodGroup (nil for a label gang,
// which has none) and whether it wrote.
func SetPodGroupCondition(ctx context.Context, cs kubernetes.Interface, key Key, cond metav1.Condition) (*schedulingv1beta1.PodGroup, bool, error) {
	if key.ByLabel {
		return nil, false, nil
	}
	if len(cond.Message) > 1024 {
		cond.Message = cond.Message[:1021] + "..."
	}
	pg, err := cs.SchedulingV1beta1().PodGroups(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	cond.ObservedGeneration = pg.Generation
	cond.LastTransitionTime = metav1.Now()
	if old := meta.FindStatusCondition(pg.Status.Conditions, cond.Type); old != nil {
		if old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
			return pg, false, nil
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	// A strategic merge patch keyed by type: the other conditions (Kubernetes' own, the other
	// component's) are not raced.
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []metav1.Condition{cond}}})
	if err != nil {
		return nil, false, err
	}
	pg, err = cs.SchedulingV1beta1().PodGroups(key.Namespace).Patch(ctx, key.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, false, fmt.Errorf("PodGroup %s: setting %s: %w", key, cond.Type, err)
	}
	return pg, true, nil
}
