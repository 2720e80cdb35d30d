package gang

// The contract between the scheduler plugin (or the extender), the operator and the pods: labels
// and annotations under inapack.io/. The plugin writes a pod's plan annotations before the pod is
// bound (PreBind); the operator, once every pod of the gang carries the same plan, installs the
// job on the switches and writes the wiring annotations and Ready; the plugin binds the pod only
// then, so a container that reads its environment from these annotations (the downward API) starts
// with everything it needs, on a real kubelet as on the emulated node runner.
const (
	// JobLabel on a pod names its job (one per namespace) where the cluster lacks the Workload
	// API: the gang is every pod with the same value, MinCountAnnotation pods at least.
	JobLabel = "inapack.io/job"
	// MinCountAnnotation on a pod of a label gang: the gang's size (all pods or none).
	MinCountAnnotation = "inapack.io/min-count"
	// RoleLabel on a pod: RolePS for the job's parameter server (exactly one per gang, no GPUs),
	// RoleWorker (the default) for a worker.
	RoleLabel  = "inapack.io/role"
	RolePS     = "ps"
	RoleWorker = "worker"
	// ModelAnnotation on a pod (any of the gang's, the PS's first): the model profile NetPack
	// places by (netpack.ProfileNames; default resnet50).
	ModelAnnotation = "inapack.io/model"

	// Node labels: the node's rack (one ToR per rack; nodes without it are placed with INA off),
	// the ToR switch's name and the switch port the node's NIC is cabled to.
	RackLabel       = "inapack.io/rack"
	SwitchLabel     = "inapack.io/switch"
	SwitchPortLabel = "inapack.io/switch-port"
	// NICAnnotation on a node: its NIC in Gbit/s (default the plugin's nicGbps argument).
	NICAnnotation = "inapack.io/nic-gbps"

	// Plan annotations, written by the plugin on every pod of a planned gang.
	// PlanAnnotation identifies the plan (namespace/gang#generation): pods of one plan belong
	// together; a gang planned again after a failed attempt gets a new one.
	PlanAnnotation = "inapack.io/plan"
	// NodeAnnotation is the node the plan puts the pod on (spec.nodeName is set only by the bind).
	NodeAnnotation = "inapack.io/node"
	// RankAnnotation is a worker's rank (its bit in the switch's worker bitmap): remote workers in
	// node order first, the worker on the PS's node (if any) last, as the scheduler service ranks.
	RankAnnotation = "inapack.io/rank"
	// MemberAnnotation is a worker's index among its gang's workers on the same node, 0..k-1 (k
	// worker pods of one gang may share a node: NetPack places GPUs per machine, and 1-GPU worker
	// pods on a multi-GPU node make up its share). The members of a node in pod-name order; where
	// the node is the PS's, its last member is the local worker (LocalAnnotation), so the members
	// that send through the switch port are 0.. without a gap. The operator and the data plane
	// tell workers behind one switch port apart by it (the INA header's member); absent is 0.
	MemberAnnotation = "inapack.io/member"
	// WorldSizeAnnotation is the gang's number of workers.
	WorldSizeAnnotation = "inapack.io/world-size"
	// PSNodeAnnotation is the node of the gang's PS.
	PSNodeAnnotation = "inapack.io/ps-node"
	// LocalAnnotation is "true" on a worker on the PS's node, which reaches the PS over a private
	// link on that node and never crosses the switch, and on the PS of a gang that has one.
	LocalAnnotation = "inapack.io/local"
	// INAAnnotation is NetPack's choice of aggregating in the switches ("true"/"false").
	INAAnnotation = "inapack.io/ina"
	// PriorityAnnotation is the ESA priority NetPack chose (0..255).
	PriorityAnnotation = "inapack.io/priority"

	// Wiring annotations, written by the operator once the job is on the switches.
	// SwitchJobAnnotation is the job's id on the switches and in its packets (INAPACK_JOB). A
	// gang whose only worker shares the PS's node never crosses a switch: it gets no entries, but
	// still an id of its own (the operator's allocation), which names its private link
	// (scheduler.LocalLink) uniquely on the node.
	SwitchJobAnnotation = "inapack.io/switch-job"
	// SlotBaseAnnotation and WindowAnnotation: the job's aggregator slots (INAPACK_SLOT_BASE,
	// INAPACK_WINDOW).
	SlotBaseAnnotation = "inapack.io/slot-base"
	WindowAnnotation   = "inapack.io/window"
	// PriorityCapAnnotation is the priority written to the switches (INAPACK_PRIORITY).
	PriorityCapAnnotation = "inapack.io/priority-cap"
	// IPAnnotation and IfaceAnnotation: the pod's address and the interface it sends on
	// (INAPACK_IP, INAPACK_IFACE; on the PS every interface it serves, comma-separated: its
	// node's, then its end of the private link when it has a local worker, since ina-ps takes
	// -iface a,b); PSIPAnnotation and PSMACAnnotation the PS's (INAPACK_PS_IP, INAPACK_PS_MAC).
	// LocalIfaceAnnotation: on a pod with a local peer, its own end of the private link.
	IPAnnotation         = "inapack.io/ip"
	IfaceAnnotation      = "inapack.io/iface"
	PSIPAnnotation       = "inapack.io/ps-ip"
	PSMACAnnotation      = "inapack.io/ps-mac"
	LocalIfaceAnnotation = "inapack.io/local-iface"
	// ReadyAnnotation carries the plan the operator installed: the plugin binds a pod once it
	// equals the pod's PlanAnnotation.
	ReadyAnnotation = "inapack.io/ready"

	// Finalizer keeps a pod of an installed job until the operator has removed the job's entries
	// from the switches.
	Finalizer = "inapack.io/switch-entries"

	// GPUResource is the extended resource of a node's GPUs.
	GPUResource = "nvidia.com/gpu"
)
