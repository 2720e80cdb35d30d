package operator

import (
	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/kube/gang"
)

// Env is the environment a gang's container reads its wiring from: each variable the agents, the
// Python package and torchrun read taken from its pod's annotation through the downward API:
// RANK, WORLD_SIZE and INAPACK_*, and for torchrun, one agent and one process per pod,
// NODE_RANK, NNODES, MASTER_ADDR and MASTER_PORT (--node-rank $(NODE_RANK) --nnodes $(NNODES)
// --master-addr $(MASTER_ADDR) --master-port $(MASTER_PORT)). The kubelet resolves it when the
// container starts, which is after the bind, and the plugin binds only once the operator has
// written the wiring: a container's command can use them as $(INAPACK_JOB) and so on.
// INAPACK_LOCAL_IFACE is empty on a pod with no local peer, INAPACK_MEMBER on a pod the plugin
// gave no member (the agents read empty as 0).
func Env() []v1.EnvVar {
	var out []v1.EnvVar
	for _, e := range []struct{ name, annotation string }{
		{"RANK", gang.RankAnnotation},
		{"INAPACK_MEMBER", gang.MemberAnnotation},
		{"WORLD_SIZE", gang.WorldSizeAnnotation},
		{"INAPACK_JOB", gang.SwitchJobAnnotation},
		{"INAPACK_SLOT_BASE", gang.SlotBaseAnnotation},
		{"INAPACK_WINDOW", gang.WindowAnnotation},
		{"INAPACK_PRIORITY", gang.PriorityCapAnnotation},
		{"INAPACK_IP", gang.IPAnnotation},
		{"INAPACK_IFACE", gang.IfaceAnnotation},
		{"INAPACK_PS_IP", gang.PSIPAnnotation},
		{"INAPACK_PS_MAC", gang.PSMACAnnotation},
		{"INAPACK_LOCAL_IFACE", gang.LocalIfaceAnnotation},
		// torchrun's: one torchrun agent per pod, the node rank the switch's worker bit.
		{"NODE_RANK", gang.RankAnnotation},
		{"NNODES", gang.WorldSizeAnnotation},
		{"MASTER_ADDR", gang.MasterAddrAnnotation},
		{"MASTER_PORT", gang.MasterPortAnnotation},
	} {
		out = append(out, v1.EnvVar{Name: e.name, ValueFrom: &v1.EnvVarSource{
			FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + e.annotation + "']"}}})
	}
	return out
}
