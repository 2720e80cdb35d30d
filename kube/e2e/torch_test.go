package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/operator"
)

// The torch gang: PyTorch DDP of make torch-demo's model (python/inapack/demo/torchtrain.py, a
// small CNN on scikit-learn's digits) under torchrun, one agent and one process per pod, with
// dist.init_process_group(backend="inapack"): every gradient bucket through the switch. --check
// makes each rank gather every bucket through gloo and compare the switch's sum with the
// fixed-point rule bit for bit (inapack.fixedpoint.allreduce) and with the exact sum within its
// bound; a step counts exact only if all its buckets are, and the gang passes only with every
// step of every rank exact (row.finish, as for the other gangs' all-reduces).
const (
	torchWorkers = 4
	torchEpochs  = 5
	// Steps per epoch: scikit-learn's digits (1797 images) less a quarter for the test set
	// (450) is 1347, cut into global batches of torchWorkers x 32 (torchtrain's --batch).
	torchSteps = torchEpochs * ((1797 - 450) / (torchWorkers * 32))
	// podIface is each emulated host's end of the pod network, gloo's and torchrun's interface.
	podIface = "pod0"
)

// torchRun is what the torch gang's image holds: python with torch (scripts/pyenv.sh, as make
// torch-demo finds it), the inapack package and its library.
type torchRun struct{ python, pythonPath, lib string }

// torchWave is the demo's last wave, the torch gang alone on the cluster (four 2-GPU workers
// and a PS on five 2-GPU nodes), or none, with one line, where build/pyenv lacks torch; under CI
// (which installs torch) that is a failure.
func torchWave(t *testing.T) [][]gangJob {
	t.Helper()
	rt, why := findTorch(t)
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the torch gang: %s (CI installs torch: scripts/pyenv.sh)", why)
		}
		fmt.Printf("k8s-demo: SKIP the torch gang: %s\n", why)
		return nil
	}
	g := gangJob{Job: kubetest.Job{Namespace: "default", Name: "j9", Workers: torchWorkers, GPUsPerWorker: 2, Model: "resnet50",
		PodGroup: true, SchedulerName: "inapack-scheduler"}, iters: torchSteps, torch: rt}
	return [][]gangJob{{g}}
}

// findTorch is the python make torch-demo uses and the library it loads ("" and why not).
func findTorch(t *testing.T) (*torchRun, string) {
	t.Helper()
	rootAbs, err := filepath.Abs(root)
	kubetest.Fatal(t, err)
	out, err := exec.Command(filepath.Join(rootAbs, "scripts/pyenv.sh")).Output()
	if err != nil {
		return nil, fmt.Sprintf("scripts/pyenv.sh failed (%v): no python with torch", err)
	}
	py := strings.TrimSpace(string(out))
	if msg, err := exec.Command(py, "-c", "import torch, sklearn").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("%s lacks torch or scikit-learn: %s", py, strings.TrimSpace(string(msg)))
	}
	lib := os.Getenv("INAPACK_LIB")
	if lib == "" {
		lib = filepath.Join(t.TempDir(), "libinapack.so")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", lib, "./worker/cabi")
		cmd.Dir = rootAbs
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building libinapack.so: %v\n%s", err, out)
		}
	}
	lib, err = filepath.Abs(lib)
	kubetest.Fatal(t, err)
	return &torchRun{python: py, pythonPath: filepath.Join(rootAbs, "python"), lib: lib}, ""
}

// torchCommands: the PS as the other gangs'; each worker torchrun with the rendezvous the
// operator wrote (operator.Env: NODE_RANK, NNODES, MASTER_ADDR, MASTER_PORT), as in
// deploy/sample/workers.yaml. The image's environment (PYTHONPATH, INAPACK_LIB) and gloo's
// interface are set on the container.
func (g *gangJob) torchCommands(seed int) {
	g.Env = append(operator.Env(),
		v1.EnvVar{Name: "PYTHONPATH", Value: g.torch.pythonPath}, v1.EnvVar{Name: "INAPACK_LIB", Value: g.torch.lib},
		v1.EnvVar{Name: "OMP_NUM_THREADS", Value: "1"}, v1.EnvVar{Name: "GLOO_SOCKET_IFNAME", Value: podIface},
		v1.EnvVar{Name: "INAPACK_PROGRESS_TIMEOUT", Value: "20"})
	g.PSCommand = []string{"ina-ps", "-iface", "$(INAPACK_IFACE)", "-ip", "$(INAPACK_PS_IP)", "-mac", "$(INAPACK_PS_MAC)",
		"-job", "$(INAPACK_JOB):$(WORLD_SIZE):$(INAPACK_WINDOW)"}
	g.WorkerCommand = []string{g.torch.python, "-m", "torch.distributed.run", "--nnodes=$(NNODES)", "--nproc-per-node=1",
		"--node-rank=$(NODE_RANK)", "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)",
		"-m", "inapack.demo.torchtrain", "--backend=inapack", "--check", fmt.Sprintf("--epochs=%d", torchEpochs),
		fmt.Sprintf("--seed=%d", seed)}
}

// podNetwork gives the emulated hosts what a cluster's node network gives its nodes: an address
// each (10.244.0.<i+1>/24 on pod0, the nodes in order) on a bridge in a namespace of its own, and
// records it as the node's InternalIP, the address the operator gives rank 0's torchrun
// (MASTER_ADDR). The switch's links stay the INA fabric's alone (their eth0 takes in nothing:
// internal/ipdrop).
func podNetwork(t *testing.T, c *emu.Cluster, prefix string, nodes []*v1.Node) {
	t.Helper()
	ns := prefix + "-pods"
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("pod network: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_ = exec.Command("ip", "netns", "del", ns).Run() // a namespace a killed run left behind
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() }) // its veths go with it
	ip("-n", ns, "link", "add", "br0", "type", "bridge")
	ip("-n", ns, "link", "set", "br0", "up")
	for i, n := range nodes {
		h, ok := c.Hosts[n.Name]
		if !ok {
			t.Fatalf("pod network: node %s is no emulated host", n.Name)
		}
		port := fmt.Sprintf("%sp%d", prefix, i)
		ip("-n", ns, "link", "add", port, "type", "veth", "peer", "name", podIface, "netns", h.Netns)
		ip("-n", ns, "link", "set", port, "master", "br0", "up")
		addr := fmt.Sprintf("10.244.0.%d", i+1)
		ip("-n", h.Netns, "addr", "add", addr+"/24", "dev", podIface)
		ip("-n", h.Netns, "link", "set", podIface, "up")
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: addr})
	}
}

// torchReport prints, for the demo, the torch gang's rendezvous and its rank 0's training: the
// loss and test accuracy after each epoch, the steps exact.
func (r *row) torchReport(t *testing.T, logs string) {
	t.Helper()
	if r.job.torch == nil || !*demo {
		return
	}
	_, pods := r.job.Objects()
	for _, p := range pods[1:] {
		b, err := os.ReadFile(filepath.Join(logs, p.Namespace+"_"+p.Name+".log"))
		if err != nil {
			t.Errorf("gang %s: %v", r.job.Name, err)
			return
		}
		if !strings.Contains(string(b), " rank=0 ") {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "worker: ") && strings.Contains(l, "train_loss=") || strings.HasPrefix(l, "worker-summary: ") {
				fmt.Printf("k8s-demo: %s torchrun %s: %s\n", r.job.Name, p.Name, l)
			}
		}
	}
}
