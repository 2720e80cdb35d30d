// Package kueuetest runs Kueue's own controller manager (cmd/kueue of the sigs.k8s.io/kueue
// module, at Version) against a kubetest API server, with Kueue's CRDs and webhooks.
package kueuetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
)

// Module and Version: the Kueue whose manager, CRDs and webhook configurations are used. It is
// no requirement of this module's go.mod: Kueue v0.17 imports Kubeflow Trainer's API, whose
// generated OpenAPI code refers to core/v1 types Kubernetes 1.37 removed (PodStatusResult), so
// it cannot be linked with this module's k8s.io v0.37; its manager is built with its own go.mod.
const (
	Module  = "sigs.k8s.io/kueue"
	Version = "v0.17.0"
)

// Frameworks are the integrations the manager runs (Kueue's names): pod groups only, which need
// no other controller (the harness runs no job controller to make batch Jobs' pods).
var Frameworks = []string{"pod"}

// metricsCerts is where cmd/kueue reads its metrics server's certificate when Kueue does not
// manage its own certificates (a fixed path in its main).
const metricsCerts = "/etc/kueue/metrics/certs"

// Kueue is Kueue's manager running against a kubetest API server.
type Kueue struct {
	Client dynamic.Interface // for Kueue's objects (WorkloadResource, ...)
	Dir    string            // the Kueue module's directory in the module cache
}

// WorkloadResource and ClusterQueueResource are Kueue's Workload and ClusterQueue (v1beta2, the
// version its controllers use).
var (
	WorkloadResource     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	ClusterQueueResource = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
)

// ModuleDir is the Kueue module's directory in the module cache (go mod download puts it there).
func ModuleDir() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", Module, Version, err, m.Error)
	}
	return m.Dir, nil
}

// Binary builds Kueue's manager at Version with its own go.mod's dependencies (go install
// sigs.k8s.io/kueue/cmd/kueue@Version), once, in the user's cache directory; test binaries run
// at once (make kube-test's packages) wait for one build. built is how long this call's build
// took (0: it was there).
func Binary() (path string, built time.Duration, err error) {
	version := Version
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", 0, err
	}
	bin := filepath.Join(cache, "inapack", "kueue-"+version)
	path = filepath.Join(bin, "kueue")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", 0, err
	}
	unlock, err := lock(bin + ".lock")
	if err != nil {
		return "", 0, err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		return path, 0, nil
	}
	start := time.Now()
	cmd := exec.Command("go", "install", Module+"/cmd/kueue@"+version)
	cmd.Dir = os.TempDir() // outside this module: Kueue's go.mod decides its dependencies
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("go install %s/cmd/kueue@%s: %w\n%s", Module, version, err, out)
	}
	return path, time.Since(start), nil
}

// lock takes an exclusive lock on path (made if absent) until unlock.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// metricsDir is made by the first test process that needs it and removed by the last (make
// kube-test runs the Kueue test and the end-to-end test at once); users holds one file per
// process using it, so a directory of another's (a Kueue installed on this machine) is told
// apart and left alone. The metrics server is off (bindAddress "0"): the certificate is read,
// never served, and any pair does.
const (
	metricsRoot = "/etc/kueue"
	metricsLock = "inapack-kueue-etc.lock" // in os.TempDir()
	users       = metricsRoot + "/inapack-test-users"
)

// shareMetricsCerts makes sure metricsCerts holds a certificate pair (certDir's, if it has none
// yet) and records this process as a user until the test ends.
func shareMetricsCerts(t testing.TB, certDir string) {
	t.Helper()
	unlock, err := lock(filepath.Join(os.TempDir(), metricsLock))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(metricsRoot); err == nil {
		if _, err := os.Stat(users); err != nil {
			t.Skip("SKIP: " + metricsRoot + " exists and is not this test's (a Kueue of this machine?); Kueue's manager reads its metrics certificate there")
		}
	}
	if err := os.MkdirAll(users, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(metricsCerts, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(metricsCerts, f)); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(certDir, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(metricsCerts, f), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	me := filepath.Join(users, strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(me, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unlock, err := lock(filepath.Join(os.TempDir(), metricsLock))
		if err != nil {
			return
		}
		defer unlock()
		_ = os.Remove(me)
		es, _ := os.ReadDir(users)
		for _, e := range es {
			pid, err := strconv.Atoi(e.Name())
			if err == nil && syscall.Kill(pid, 0) == nil {
				return // another test process still runs Kueue
			}
		}
		_ = os.RemoveAll(metricsRoot)
	})
}

// Start installs Kueue's CRDs and admission webhooks (served on loopback, with a fresh CA) on
// api and runs Kueue's manager until the test ends. It needs root: cmd/kueue reads a metrics
// certificate under /etc/kueue (written here, removed at the end).
func Start(ctx context.Context, t testing.TB, api *kubetest.API) *Kueue {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: Kueue's manager needs root here (it reads its metrics certificate from " + metricsCerts + ")")
	}
	dir, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	bin, built, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	if built > 0 {
		t.Logf("built Kueue %s's manager (go install %s/cmd/kueue@%s) in %v", Version, Module, Version, built.Round(time.Second))
	}
	cfg := api.Config
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		ErrorIfPathMissing: true,
		Paths:              []string{filepath.Join(dir, "config", "components", "crd", "bases")},
		MaxTime:            2 * time.Minute, // envtest's 10 s is short for Kueue's CRDs on a loaded machine
	}); err != nil {
		t.Fatalf("installing Kueue's CRDs: %v", err)
	}
	wh := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1",
		Paths: []string{filepath.Join(dir, "config", "components", "webhook", "manifests.yaml")}}
	if err := wh.PrepWithoutInstalling(); err != nil {
		t.Fatalf("reading Kueue's webhook configurations: %v", err)
	}
	keepServed(wh)
	if err := wh.Install(cfg); err != nil {
		t.Fatalf("installing Kueue's webhooks: %v", err)
	}
	t.Cleanup(func() { _ = wh.Cleanup() })

	shareMetricsCerts(t, wh.LocalServingCertDir)
	_, err = api.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	conf := filepath.Join(tmp, "kueue.yaml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: "0"
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
clientConnection:
  qps: 200
  burst: 400
integrations:
  frameworks: [%s]
`, wh.LocalServingPort, wh.LocalServingCertDir, strings.Join(Frameworks, ", "))), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tmp, "kueue.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	// MultiKueue and the visibility API server are on by default and need what this cluster
	// lacks (a manager cluster, an aggregated API server's authentication).
	cmd := exec.CommandContext(ctx, bin, "--config="+conf, "--feature-gates=MultiKueue=false,VisibilityOnDemand=false",
		"--zap-log-level=2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+versionProxy(t, api))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		logf.Close()
		if t.Failed() {
			t.Logf("Kueue's log (the end):\n%s", tail(logPath, 60))
		}
	})
	// Kueue is up when it serves its webhooks; its controllers pick up what is created before
	// their caches sync.
	addr := net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
	up := false
	for deadline := time.Now().Add(time.Minute); !up && time.Now().Before(deadline); {
		select {
		case err := <-exited:
			t.Fatalf("kueue exited: %v\n%s", err, tail(logPath, 60))
		case <-time.After(100 * time.Millisecond):
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			up = true
		}
	}
	if !up {
		t.Fatalf("Kueue serves no webhooks on %s after a minute\n%s", addr, tail(logPath, 60))
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Kueue{Client: c, Dir: dir}
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func tail(path string, lines int) string {
	ls := strings.Split(strings.TrimRight(string(readFile(path)), "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

// keepServed keeps, of Kueue's webhook configurations (config/components/webhook), those for
// its own types and the integrations in Frameworks: a configuration for a type whose webhook is
// not served would fail every request for it. Pods of kube-system and kueue-system are left
// alone, as Kueue's kustomization does.
func keepServed(o *envtest.WebhookInstallOptions) {
	keep := func(name string) bool {
		// mpod.kb.io, vclusterqueue.kb.io, ...: the kind after the m/v prefix.
		kind := strings.TrimSuffix(name, ".kb.io")[1:]
		return slices.Contains([]string{"workload", "resourceflavor", "clusterqueue", "cohort", "localqueue"}, kind) ||
			slices.Contains(Frameworks, kind)
	}
	system := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kueue-system"}}}}
	for _, c := range o.MutatingWebhooks {
		c.Webhooks = slices.DeleteFunc(c.Webhooks, func(w admissionv1.MutatingWebhook) bool { return !keep(w.Name) })
		for i := range c.Webhooks {
			if c.Webhooks[i].Name == "mpod.kb.io" {
				c.Webhooks[i].NamespaceSelector = system
			}
		}
	}
	for _, c := range o.ValidatingWebhooks {
		c.Webhooks = slices.DeleteFunc(c.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return !keep(w.Name) })
		for i := range c.Webhooks {
			if c.Webhooks[i].Name == "vpod.kb.io" {
				c.Webhooks[i].NamespaceSelector = system
			}
		}
	}
}

// versionProxy is a kubeconfig for Kueue: the API server through a loopback proxy that reports
// the Kubernetes version this test's API server is built from (go.mod's k8s.io/kubernetes). The test server's own /version
// says v0.0.0-master+$Format:%H$ (no release ldflags), which cmd/kueue refuses to parse.
func versionProxy(t testing.TB, api *kubetest.API) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	version := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(version, "v1.") {
		t.Fatalf("go list -m k8s.io/kubernetes: %q %v", version, err)
	}
	info, err := api.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	info.GitVersion = version
	body, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(api.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = tr, -1 // watches stream
	mux := http.NewServeMux()
	mux.Handle("/", rp)
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kueue.kubeconfig")
	if err := kubetest.WriteKubeconfig(&rest.Config{Host: srv.URL}, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Opt-in labels and annotations of Kueue's pod integration (pkg/controller/jobs/pod/constants,
// pkg/controller/constants, apis/kueue/v1beta2).
const (
	QueueLabel                = "kueue.x-k8s.io/queue-name"
	PriorityClassLabel        = "kueue.x-k8s.io/priority-class"
	GroupNameLabel            = "kueue.x-k8s.io/pod-group-name"
	GroupTotalCountAnnotation = "kueue.x-k8s.io/pod-group-total-count"
	PreferredTopology         = "kueue.x-k8s.io/podset-preferred-topology"
	RequiredTopology          = "kueue.x-k8s.io/podset-required-topology"
	// RetriableInGroupAnnotation "false": the group is one run. Once all its pods have ended
	// (a gang's workers succeeded and its PS deleted by the operator, or every pod deleted by a
	// preemption) Kueue finishes its Workload and lifts its finalizers, rather than keeping the
	// ended pods for replacements no one makes: an INAPack gang is never resumed pod by pod.
	RetriableInGroupAnnotation = "kueue.x-k8s.io/retriable-in-group"
)

// Kubelet plays the kubelet's part for bound pods being deleted (Kueue deletes a preempted
// gang's pods) until ctx ends: their containers stop (phase Failed, as the kubelet ends a
// deleted pod since Kubernetes 1.27), then the object is deleted for good (once its finalizers
// let it). Tests that run pods' commands use noderunner instead.
func Kubelet(ctx context.Context, cs kubernetes.Interface) {
	go func() {
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
						continue
					}
					if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
						p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Killed"
						p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
							State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Killed"}}}}
						if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
							continue
						}
					}
					zero := int64(0)
					_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
						Preconditions: &metav1.Preconditions{UID: &p.UID}})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// Queued are j's pods (kubetest.Job.Objects) as a Kueue pod group submitted to the LocalQueue
// queue: one group named as the gang, of all its pods, of WorkloadPriorityClass priority ("" for
// none); the workers carry topology (PreferredTopology or RequiredTopology: level) if given.
func Queued(j kubetest.Job, queue, priority string, topology map[string]string) []*corev1.Pod {
	_, pods := j.Objects()
	for _, p := range pods {
		p.Labels[QueueLabel] = queue
		p.Labels[GroupNameLabel] = j.Name
		if priority != "" {
			p.Labels[PriorityClassLabel] = priority
		}
		p.Annotations[GroupTotalCountAnnotation] = strconv.Itoa(len(pods))
		p.Annotations[RetriableInGroupAnnotation] = "false"
		if p.Labels[gang.RoleLabel] != gang.RolePS {
			maps.Copy(p.Annotations, topology)
		}
	}
	return pods
}

// Apply creates the objects of path as kubectl apply does: a kustomization directory rendered
// by kustomize (-k), or a file of YAML documents (-f); namespaces first and pods last (a gang's
// pods before their LocalQueue would wait for it).
func Apply(ctx context.Context, t testing.TB, api *kubetest.API, path string) {
	t.Helper()
	var docs [][]byte
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", path, err)
		}
		for _, r := range rm.Resources() {
			b, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, b)
		}
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range strings.Split(string(b), "\n---") {
			docs = append(docs, []byte(d))
		}
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "Pod":
			return 2
		}
		return 1
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	dyn, err := dynamic.NewForConfig(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(api.Client.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s apply: %s %s: %v", path, gvk.Kind, o.GetName(), err)
		}
	}
}
