// Package operator installs Kubernetes training gangs on the switches. It watches pods carrying
// the plan annotations the NetPack scheduler plugin (or the extender) writes before binding them.
// Once every pod of a plan carries it, the operator adds its finalizer to each, allocates the
// job's switch id and aggregator slots by the scheduler service's rules (scheduler.NextSwitchJob,
// scheduler.SlotBase), derives the job's switch entries from the placement and the topology
// (topology.json in a ConfigMap; its hosts are the nodes), adds the job through the switch
// controller's job API, writes the wiring annotations the pods' containers read (switch job,
// slots, priority, addresses, interfaces) and finally Ready, on which the plugin binds the pods.
//
// When the job ends (every worker Succeeded, a pod Failed or deleted, or the gang re-planned
// before it was bound) the operator removes the job from the switch controller, which deletes its
// entries and frees its slots, deletes the pods that have nothing left to do, and only then
// removes its finalizers. All state lives in the pods' annotations (InstalledAnnotation names
// the plan whose switch job a pod's wiring describes), so a restarted operator carries on where
// the last one stopped, and the finalizer keeps a pod from vanishing while its job is on a switch.
//
// Every SyncInterval the running gangs are compared with the controller's job list: a job the
// controller lost is added again, a job of the operator's Owner that no live gang holds is removed
// (sync.go). Errors of the job API are told apart by status code; each refusal is the pods'
// condition InstalledCondition and a Warning event (conditions.go); retries back off to at most
// MaxRetryDelay.
package operator
