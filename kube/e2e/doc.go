// Package e2e runs training gangs end to end on Kubernetes: a real etcd, kube-apiserver and
// kube-scheduler with the NetPack plugin, the operator and the switch controller, on an emulated
// cluster (emu) with a pod network for torchrun's rendezvous. make k8s-demo runs
// TestKubernetesEndToEnd as a demo; its last gang is a PyTorch job under torchrun with the backend
// inapack (torch_test.go).
package e2e
