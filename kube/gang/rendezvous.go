package gang

// torchrun's rendezvous, part of the same contract: the operator writes, with the wiring, where a
// gang's rank 0 serves torchrun's store, and the pods read it as MASTER_ADDR and MASTER_PORT
// (operator.Env). One process per pod: torchrun's --node-rank is the pod's RankAnnotation and
// --nnodes its WorldSizeAnnotation, so torch.distributed's ranks are the switch's worker bits.
const (
	// MasterServiceAnnotation on a gang's pods names a headless Service of their namespace (a
	// DNS-1035 label) that selects MasterLabel=<that name>: the operator puts the label on rank
	// 0's pod and MASTER_ADDR is the Service's name, <service>.<namespace>.svc. Without it
	// MASTER_ADDR is rank 0's node's InternalIP, the pod's own address as INAPack's pods run
	// (hostNetwork: the node's NIC on the INA fabric).
	MasterServiceAnnotation = "inapack.io/master-service"
	// MasterLabel is on rank 0's pod only, its value the gang's MasterServiceAnnotation.
	MasterLabel = "inapack.io/master"
	// MasterAddrAnnotation and MasterPortAnnotation (MASTER_ADDR, MASTER_PORT) are on every pod
	// of the plan. The port is the operator's base port plus the switch job id: unique among the
	// gangs installed, so two gangs' rank 0 pods on one node (host network) never share one.
	MasterAddrAnnotation = "inapack.io/master-addr"
	MasterPortAnnotation = "inapack.io/master-port"
)
