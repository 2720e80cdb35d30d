package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/noderunner"
	"github.com/inapack/inapack/kube/operator"
	"github.com/inapack/inapack/kube/plugin"
	"github.com/inapack/inapack/scheduler"
)

var (
	demo     = flag.Bool("demo", false, "print the demo's table and its closing line (make k8s-demo)")
	switchTo = flag.String("switch", envOr("SWITCH", "ref"), "ref (the reference switch) or bmv2")
	topoPath = flag.String("topology", "../../bmv2/topologies/two-racks/topology.json", "the emulated cluster")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" && v != "auto" {
		return v
	}
	return def
}

// root is the repository's root (this package is kube/e2e).
const root = "../.."

// bins builds the agents, the reference switch and the controller once (INAPACK_BIN: use those).
func bins(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("INAPACK_BIN"); d != "" {
		abs, err := filepath.Abs(d)
		kubetest.Fatal(t, err)
		return abs
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/ina-ps", "./cmd/ina-worker", "./cmd/refswitch", "./cmd/inactl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the agents: %v\n%s", err, out)
	}
	return dir
}

// gangJob is one training job of the trace: its gang and what its workers run.
type gangJob struct {
	kubetest.Job
	iters   int
	values  int
	compute time.Duration
	torch   *torchRun // a torchrun job (torch_test.go), iters its steps
}

// trace is the demo's jobs in waves: a wave's gangs are submitted one after another (each once
// the one before is bound) and run together; the next wave starts when they have all ended. The
// two-racks hosts have 2 GPUs each. In the first wave the workers take whole machines and fill
// the cluster; the second has a label gang (no PodGroup), a job on a single node, and j5, four
// 1-GPU worker pods on the two machines left, two to a node: each node's pair shares its switch
// port as members 0 and 1. The third is j6, six 1-GPU pods alone on the cluster: NetPack, told
// that the PS's node may hold one of them at most, puts them two to a node on h1, h2 and h3 and
// the PS on h4, with INA on: the first rack's ToR aggregates two members behind each of two ports,
// the second's two behind one.
func trace() [][]gangJob {
	mk := func(name string, workers, gpus int, model string, pg bool, iters, values int) gangJob {
		return gangJob{Job: kubetest.Job{Namespace: "default", Name: name, Workers: workers, GPUsPerWorker: gpus, Model: model,
			PodGroup: pg, SchedulerName: "inapack-scheduler"}, iters: iters, values: values, compute: 5 * time.Millisecond}
	}
	return [][]gangJob{
		{mk("j1", 3, 2, "vgg16", true, 40, 16384), mk("j2", 2, 2, "resnet50", true, 40, 8192)},
		{mk("j3", 2, 2, "bert-base", false, 40, 8192), mk("j4", 1, 2, "resnet50", true, 40, 8192), mk("j5", 4, 1, "resnet50", true, 40, 8192)},
		{mk("j6", 6, 1, "vgg16", true, 40, 16384)},
	}
}

// commands are the pod's containers as a user writes them: the agents' flags from the
// environment, the environment from the operator's annotations (the downward API); ina-worker
// reads its member from INAPACK_MEMBER.
func (g *gangJob) commands(seed int) {
	if g.torch != nil {
		g.torchCommands(seed)
		return
	}
	g.Env = operator.Env() // INAPACK_MEMBER tells a node's workers of the gang apart
	g.PSCommand = []string{"ina-ps", "-iface", "$(INAPACK_IFACE)", "-ip", "$(INAPACK_PS_IP)", "-mac", "$(INAPACK_PS_MAC)",
		"-job", "$(INAPACK_JOB):$(WORLD_SIZE):$(INAPACK_WINDOW)"}
	g.WorkerCommand = []string{"ina-worker", "-iface", "$(INAPACK_IFACE)", "-ip", "$(INAPACK_IP)",
		"-job", "$(INAPACK_JOB)", "-rank", "$(RANK)", "-workers", "$(WORLD_SIZE)", "-priority", "$(INAPACK_PRIORITY)",
		"-slot-base", "$(INAPACK_SLOT_BASE)", "-window", "$(INAPACK_WINDOW)", "-ps-ip", "$(INAPACK_PS_IP)", "-ps-mac", "$(INAPACK_PS_MAC)",
		"-size", fmt.Sprint(g.values), "-iters", fmt.Sprint(g.iters), "-compute", g.compute.String(),
		"-seed", fmt.Sprint(seed), "-progress-timeout", "20s"}
}

// TestKubernetesEndToEnd runs a trace of training gangs through a real API server and
// kube-scheduler with the NetPack plugin, the operator and the switch controller, on an emulated
// cluster (network namespaces, reference switches or BMv2). The node runner that starts each bound
// pod's command in its node's namespace is the one stand-in: it plays the kubelet for emulated
// hosts. Every all-reduce must be exact, the placements those of the scheduler service, and
// nothing may be left on a switch, in the API or on the hosts.
func TestKubernetesEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: the Kubernetes end-to-end test needs root (network namespaces, veth links, AF_PACKET)")
	}
	if *switchTo == "bmv2" {
		if _, err := exec.LookPath("simple_switch_grpc"); err != nil {
			t.Skip("SKIP: SWITCH=bmv2 but simple_switch_grpc is not on PATH")
		}
	}
	prepareKueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bin := bins(t)
	topo, err := topology.Load(*topoPath)
	kubetest.Fatal(t, err)
	cl, err := scheduler.NewCluster(topo, scheduler.ClusterParams{})
	kubetest.Fatal(t, err)

	dir := t.TempDir()
	ecfg := emu.Config{Topology: *topoPath, Prefix: fmt.Sprintf("k%d", os.Getpid()%10000), Switch: *switchTo, Bin: bin, Dir: dir}
	if *switchTo == "bmv2" {
		ecfg.BMv2JSON, ecfg.P4Info = filepath.Join(root, "build/ina.json"), filepath.Join(root, "build/ina.p4info.txtpb")
	}
	emuc, err := emu.Start(ctx, ecfg)
	kubetest.Fatal(t, err)
	defer emuc.Close()
	ctl := api.NewClient(emuc.API, "")

	kapi := kubetest.StartAPI(t)
	kubetest.InstallCRDs(t, kapi, formCRDs...)
	nodes, err := kubetest.NodesFromTopology(topo)
	kubetest.Fatal(t, err)
	podNetwork(t, emuc, ecfg.Prefix, nodes)
	kubetest.Fatal(t, kubetest.CreateNodes(ctx, kapi.Client, nodes))
	uplink := cl.Model.Racks[0].UplinkGbps
	kubetest.StartScheduler(ctx, t, kubetest.SchedulerConfig(kapi, kubetest.NetPackProfile(fmt.Sprintf("uplinkGbps: %g", uplink),
		fmt.Sprintf("inaMemoryBytes: %d", int(cl.Model.Racks[0].INAMemoryBytes)), "rtt: 1ms", "permitTimeout: 30s", "readyTimeout: 30s"), ""),
		app.WithPlugin(plugin.Name, plugin.New))
	topoJSON, err := os.ReadFile(*topoPath)
	kubetest.Fatal(t, err)
	_, err = kapi.Client.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inapack-topology"},
		Data: map[string]string{"topology.json": string(topoJSON)}}, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
	op, err := operator.Start(ctx, kapi.Config, operator.Config{Controller: ctl, Window: 16,
		Topology: types.NamespacedName{Namespace: "default", Name: "inapack-topology"}})
	kubetest.Fatal(t, err)
	defer op.Stop()
	hosts := map[string]scheduler.HostAccess{}
	for h, ns := range emuc.Hosts {
		hosts[h] = scheduler.HostAccess{Netns: ns.Netns, Iface: ns.Iface}
	}
	logs := filepath.Join(dir, "pods")
	runner, err := noderunner.Start(ctx, kapi.Client, noderunner.Config{Nodes: hosts, Bin: bin, LogDir: logs})
	kubetest.Fatal(t, err)
	defer runner.Stop()

	var rows []row
	for w, wave := range append(append(trace(), formsWave()), torchWave(t)...) {
		svc, err := kubetest.NewService(topo) // the cluster is empty again at each wave
		kubetest.Fatal(t, err)
		first := len(rows)
		for i, g := range wave {
			g.commands(100*w + i + 1)
			submitted := time.Now()
			kubetest.Fatal(t, kubetest.Submit(ctx, kapi.Client, g.Job))
			nodes, err := kubetest.WaitBound(ctx, kapi.Client, g.Job, time.Minute)
			kubetest.Fatal(t, err)
			r := row{job: g, submitted: submitted}
			r.workers, r.ps = kubetest.Placed(g.Job, nodes)
			r.wantWorkers, r.wantPS, err = svc.Place(g.Job)
			kubetest.Fatal(t, err)
			// The service gives NetPack's machines (several 1-GPU pods of the gang share one) and
			// its PS, told as the plugin tells it that the PS's node may hold one pod at most.
			if !slices.Equal(slices.Compact(slices.Clone(r.workers)), r.wantWorkers) || r.ps != r.wantPS {
				t.Errorf("gang %s placed on workers %v ps %s; the scheduler service places it on %v ps %s", g.Name, r.workers, r.ps, r.wantWorkers, r.wantPS)
			}
			rows = append(rows, r)
		}
		if *demo {
			for _, g := range wave {
				// The first gang, any whose pods share nodes (their members) and the torch gang (its
				// rendezvous): their annotations and switch entries.
				if (w == 0 && g.Name == wave[0].Name) || g.GPUsPerWorker == 1 || g.torch != nil {
					traceGang(ctx, t, kapi, ctl, g.Job)
				}
			}
		}
		for i := first; i < len(rows); i++ {
			rows[i].finish(ctx, t, kapi, logs)
			rows[i].torchReport(t, logs)
		}
		endForms(ctx, t, kapi, wave)
		waitGone(ctx, t, kapi, ctl)
	}
	rows = append(rows, kueueGang(ctx, t, kapi, ctl, logs))
	if *demo {
		printRows(rows)
	}

	if *demo && !t.Failed() {
		fmt.Println("k8s-demo: OK")
	}
}

// traceGang prints one gang's decisions, from its pods' plan and wiring annotations to the
// entries the switch controller holds for it.
func traceGang(ctx context.Context, t *testing.T, kapi *kubetest.API, ctl *api.Client, j kubetest.Job) {
	t.Helper()
	_, pods := j.Objects()
	switchJob := 0
	for _, p := range pods {
		cur, err := kapi.Client.CoreV1().Pods(j.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("trace of %s: %v", j.Name, err)
			return
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(cur.Annotations)) {
			if strings.HasPrefix(k, "inapack.io/") && k != gang.ModelAnnotation && k != gang.MinCountAnnotation {
				kv = append(kv, strings.TrimPrefix(k, "inapack.io/")+"="+cur.Annotations[k])
			}
		}
		fmt.Printf("k8s-demo: trace %s on %s: %s\n", p.Name, cur.Spec.NodeName, strings.Join(kv, " "))
		fmt.Sscan(cur.Annotations[gang.SwitchJobAnnotation], &switchJob)
	}
	jobs, err := ctl.Jobs(ctx)
	kubetest.Fatal(t, err)
	for _, jc := range jobs {
		if jc.ID != switchJob {
			continue
		}
		for _, sw := range jc.Switches {
			b, _ := json.Marshal(sw)
			fmt.Printf("k8s-demo: trace switch entries of job %d: %s\n", jc.ID, b)
		}
	}
}

// waitGone waits until nothing of the ended jobs is left: their pods gone or succeeded with no
// finalizer holding them (the operator deletes a finished gang's PS), and no job on the
// controller.
func waitGone(ctx context.Context, t *testing.T, kapi *kubetest.API, ctl *api.Client) {
	t.Helper()
	var live []string
	var jobs int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := kapi.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		js, err := ctl.Jobs(ctx)
		if err != nil {
			return false, nil
		}
		live, jobs = nil, len(js)
		for _, p := range pods.Items {
			if p.Status.Phase != v1.PodSucceeded || len(p.Finalizers) > 0 {
				live = append(live, p.Name)
			}
		}
		return len(live) == 0 && jobs == 0, nil
	})
	if err != nil {
		t.Errorf("left behind after the jobs ended: pods %v, %d jobs on the controller", live, jobs)
	}
}

// row is one job's outcome.
type row struct {
	job                   gangJob
	submitted             time.Time
	workers, wantWorkers  []string
	ps, wantPS            string
	ina                   string
	jct                   time.Duration
	exact, wrong, workerN int
	// via is what admitted the gang beyond NetPack ("Kueue"; "" for none), note what it decided.
	via, note string
}

// finish waits for the job's workers to end and reads their verdicts from their logs.
func (r *row) finish(ctx context.Context, t *testing.T, kapi *kubetest.API, logs string) {
	t.Helper()
	_, pods := r.job.Objects()
	var end time.Time
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		done := 0
		for _, p := range pods[1:] {
			cur, err := kapi.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			r.ina = cur.Annotations[gang.INAAnnotation]
			switch cur.Status.Phase {
			case v1.PodFailed:
				return false, fmt.Errorf("pod %s failed: %s", p.Name, cur.Status.Message)
			case v1.PodSucceeded:
				done++
			}
		}
		// The API keeps times to the second: the JCT ends when this poll (every 200 ms) sees the
		// last worker succeeded.
		end = time.Now()
		return done == len(pods)-1, nil
	})
	if err != nil {
		t.Errorf("gang %s: %v", r.job.Name, err)
		return
	}
	r.jct = end.Sub(r.submitted)
	for _, p := range pods[1:] {
		b, err := os.ReadFile(filepath.Join(logs, p.Namespace+"_"+p.Name+".log"))
		if err != nil {
			t.Errorf("gang %s: %v", r.job.Name, err)
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "worker-summary:") {
				continue
			}
			r.workerN++
			var e, w int
			for _, f := range strings.Fields(l) {
				fmt.Sscanf(f, "exact=%d", &e)
				fmt.Sscanf(f, "wrong=%d", &w)
			}
			r.exact += e
			r.wrong += w
		}
	}
	if r.workerN != len(pods)-1 || r.wrong != 0 || r.exact != r.job.iters*r.job.Workers {
		t.Errorf("gang %s: %d worker summaries, %d exact and %d wrong all-reduces (want %d exact)", r.job.Name, r.workerN, r.exact, r.wrong, r.job.iters*r.job.Workers)
	}
}

// printRows prints the table; a node with several of a gang's worker pods is NODExK.
func printRows(rows []row) {
	fmt.Printf("k8s-demo: %-11s %-5s %-16s %-5s %-5s %-8s %s\n", "gang", "gpus", "workers", "ps", "ina", "jct", "all-reduces")
	for _, r := range rows {
		why := fmt.Sprintf("service: %s ps %s", strings.Join(r.wantWorkers, ","), r.wantPS)
		if r.via != "" {
			why = r.via + ": " + r.note
		}
		fmt.Printf("k8s-demo: %-11s %-5s %-16s %-5s %-5s %-8s %d exact, %d wrong (%s)\n", gangName(r.job.Job),
			fmt.Sprintf("%dx%d", r.job.Workers, r.job.GPUsPerWorker), perNode(r.workers), r.ps, r.ina,
			r.jct.Round(10*time.Millisecond), r.exact, r.wrong, why)
	}
}

// perNode is sorted nodes, one per worker pod, with a node's repeats as a count: h1x2,h3.
func perNode(nodes []string) string {
	var out []string
	for i := 0; i < len(nodes); {
		j := i
		for j < len(nodes) && nodes[j] == nodes[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%sx%d", nodes[i], j-i))
		} else {
			out = append(out, nodes[i])
		}
		i = j
	}
	return strings.Join(out, ",")
}
