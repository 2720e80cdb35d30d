// Package e2e runs training gangs end to end on Kubernetes: a real etcd, kube-apiserver and
// kube-scheduler with the NetPack plugin, the operator and the switch controller, on an emulated
// cluster (emu). make k8s-demo runs TestKubernetesEndToEnd as a demo.
package e2e
