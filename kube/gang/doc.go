// Package gang is NetPack for Kubernetes gangs: it reads the cluster from node and pod objects
// (Live, fed by the informers' events, for the plugin and the extender alike),
// places a whole training job once with the same netpack code the simulator and the scheduler
// service use, and assigns the job's pods to the placement. The scheduler plugin and the extender
// both decide with it; annotations.go is the contract with the operator and the pods.
package gang
