// Package noderunner plays the kubelet's part for emulated hosts, and is the only stand-in in
// INAPack's Kubernetes tests and demo: everything else (etcd, kube-apiserver, kube-scheduler with
// the NetPack plugin, the operator, the switch controller, the switches) is the real thing.
//
// For the pods bound to its nodes (each node an emulated host: a network namespace, as emu's
// hosts file names them) it does what a kubelet with a container runtime and a CNI would: it
// resolves the container's environment (values, $(VAR) references, the downward API's fieldRef,
// ConfigMap and Secret keys) and expands $(VAR) in its command and arguments as the kubelet does,
// finds the command's binary in a bin directory (as if the image held it; else on this machine's
// PATH, the image's base), makes the private veth link between a job's PS and the worker on its
// node when the pod's inapack.io/local annotation says so (what a CNI would provide), runs the
// command in the node's network namespace with its output in a log file, and reports the pod's
// phase and container state (Pending, Running, then Succeeded or Failed with the exit code). A
// deleted pod's process gets SIGTERM, then SIGKILL after the grace period, and the runner then
// completes the deletion as a kubelet does.
//
// What it leaves out: images, volumes, resource limits, probes, init and sidecar containers, more
// than one container per pod, and restarts (every pod runs once, as restartPolicy Never). A pod
// that needs any of them fails with a message that says which.
package noderunner
