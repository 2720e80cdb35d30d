package deploy_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/plugin"
)

// kustomizations are the directories a cluster operator applies (kubectl apply -k).
var kustomizations = []string{"../../deploy", "../../deploy/extender", "../../deploy/sample"}

// render builds a kustomization as kubectl apply -k does.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		b, err := r.AsYAML()
		kubetest.Fatal(t, err)
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatalf("%s: %s: %v", dir, r.CurId(), err)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, namePrefix string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasPrefix(o.GetName(), namePrefix) {
			return o
		}
	}
	return nil
}

func name(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// dryRunApplier applies objects to a real API server with a server-side dry run: the server
// decodes, defaults, validates and admits each as it would for kubectl apply, and stores nothing.
type dryRunApplier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	commit bool // store the objects (no dry run)
}

func (a dryRunApplier) apply(ctx context.Context, o *unstructured.Unstructured) error {
	m, err := a.mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
	if err != nil {
		return fmt.Errorf("%s: the API server serves no such kind: %w", name(o), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			return fmt.Errorf("%s: a namespaced object without a namespace", name(o))
		}
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	b, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "inapack-deploy-test", Force: &force}
	if a.commit {
		opts.DryRun = nil
	}
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, b, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", name(o), err)
	}
	return nil
}

// TestManifestsPassServerDryRun: every object of deploy/ and deploy/sample is accepted by a real
// kube-apiserver 1.37 (GenericWorkload on, as the scheduler needs) in a server-side dry-run apply.
// Namespaces are created for real first: a namespaced object's dry run is admitted only into an
// existing namespace. A broken copy of one manifest is rejected, so the check can fail.
func TestManifestsPassServerDryRun(t *testing.T) {
	ctx := context.Background()
	api := kubetest.StartAPI(t)
	dyn, err := dynamic.NewForConfig(api.Config)
	kubetest.Fatal(t, err)
	a := dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(api.Client.Discovery()))}
	var all []*unstructured.Unstructured
	for _, dir := range kustomizations {
		all = append(all, render(t, dir)...)
	}
	for _, o := range all {
		if o.GetKind() != "Namespace" {
			continue
		}
		kubetest.Fatal(t, a.apply(ctx, o))
		if _, err := api.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("namespace %s: %v", o.GetName(), err)
		}
	}
	kinds := map[string]int{}
	for _, o := range all {
		if err := a.apply(ctx, o); err != nil {
			t.Errorf("rejected: %v", err)
		}
		kinds[o.GetKind()]++
	}
	t.Logf("%d objects accepted by a server-side dry run: %v", len(all), kinds)
	for _, k := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service", "PodGroup", "Pod"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the manifests", k)
		}
	}
	// Nothing was stored: the dry run only checked.
	if _, err := api.Client.AppsV1().Deployments("inapack-system").Get(ctx, "ina-kube-scheduler", metav1.GetOptions{}); err == nil {
		t.Error("the dry run created the scheduler's Deployment")
	}

	bad := find(all, "Deployment", "ina-kube-scheduler").DeepCopy()
	kubetest.Fatal(t, unstructured.SetNestedField(bad.Object, int64(-1), "spec", "replicas"))
	if err := a.apply(ctx, bad); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("a Deployment with replicas -1 was not rejected over its replicas: %v", err)
	}
}

// TestSchedulerConfig: the KubeSchedulerConfiguration in the scheduler's ConfigMap loads with
// kube-scheduler's own loader and validation, has the inapack-scheduler profile with NetPack
// enabled, and NetPack's args decode into plugin.Args and validate; the Deployment mounts that
// ConfigMap where its --config flag points.
func TestSchedulerConfig(t *testing.T) {
	objs := render(t, "../../deploy")
	cm := find(objs, "ConfigMap", "ina-kube-scheduler-config")
	if cm == nil {
		t.Fatal("no ConfigMap ina-kube-scheduler-config*")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	const key = "scheduler-config.yaml"
	path := filepath.Join(t.TempDir(), key)
	kubetest.Fatal(t, os.WriteFile(path, []byte(data[key]), 0o600))
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatalf("kube-scheduler cannot load the config: %v", err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("kube-scheduler rejects the config: %v", err)
	}
	i := slices.IndexFunc(cfg.Profiles, func(p schedconfig.KubeSchedulerProfile) bool { return p.SchedulerName == "inapack-scheduler" })
	if i < 0 {
		t.Fatal("no profile inapack-scheduler")
	}
	prof := cfg.Profiles[i]
	if !slices.ContainsFunc(prof.Plugins.MultiPoint.Enabled, func(p schedconfig.Plugin) bool { return p.Name == plugin.Name }) {
		t.Errorf("profile inapack-scheduler does not enable %s: %+v", plugin.Name, prof.Plugins.MultiPoint.Enabled)
	}
	var raw runtime.Object
	for _, pc := range prof.PluginConfig {
		if pc.Name == plugin.Name {
			raw = pc.Args
		}
	}
	if raw == nil {
		t.Fatalf("profile inapack-scheduler has no pluginConfig for %s", plugin.Name)
	}
	var args plugin.Args
	kubetest.Fatal(t, frameworkruntime.DecodeInto(raw, &args))
	if err := args.Validate(); err != nil {
		t.Errorf("NetPack args: %v", err)
	}
	if args.Policy != "netpack" || args.WaitForOperator == nil || !*args.WaitForOperator || args.RTT == nil || args.RTT.Duration.Microseconds() != 20 {
		t.Errorf("NetPack args decoded as %+v: want policy netpack, waitForOperator true, rtt 20us", args)
	}

	dep := find(objs, "Deployment", "ina-kube-scheduler")
	vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	ctrs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	mounted := ""
	for _, v := range vols {
		if n, _, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name"); n == cm.GetName() {
			vn, _, _ := unstructured.NestedString(v.(map[string]any), "name")
			mounts, _, _ := unstructured.NestedSlice(ctrs[0].(map[string]any), "volumeMounts")
			for _, m := range mounts {
				if m.(map[string]any)["name"] == vn {
					mounted = m.(map[string]any)["mountPath"].(string)
				}
			}
		}
	}
	cmd, _, _ := unstructured.NestedStringSlice(ctrs[0].(map[string]any), "command")
	if want := "--config=" + filepath.Join(mounted, key); mounted == "" || !slices.Contains(cmd, want) {
		t.Errorf("the Deployment runs %v with ConfigMap %s mounted at %q: want %s", cmd, cm.GetName(), mounted, want)
	}
}

// TestExtenderSchedulerConfig: the stock kube-scheduler's configuration for the extender loads
// and validates, and hands NetPack filter, prioritize and bind.
func TestExtenderSchedulerConfig(t *testing.T) {
	cfg, err := options.LoadConfigFromFile(klog.Background(), "../../deploy/extender/kube-scheduler-config.yaml")
	if err != nil {
		t.Fatalf("kube-scheduler cannot load the config: %v", err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("kube-scheduler rejects the config: %v", err)
	}
	if len(cfg.Extenders) != 1 {
		t.Fatalf("%d extenders, want 1", len(cfg.Extenders))
	}
	x := cfg.Extenders[0]
	if x.FilterVerb != "filter" || x.PrioritizeVerb != "prioritize" || x.BindVerb != "bind" || !x.NodeCacheCapable || len(x.ManagedResources) != 0 {
		t.Errorf("extender %+v: want filter, prioritize and bind, node names, and every pod (a PS requests no GPU)", x)
	}
}

// TestSwitchControllerConfig: inactl's config in its ConfigMap passes inactl's own validation.
func TestSwitchControllerConfig(t *testing.T) {
	cm := find(render(t, "../../deploy"), "ConfigMap", "inactl-config")
	if cm == nil {
		t.Fatal("no ConfigMap inactl-config*")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	path := filepath.Join(t.TempDir(), "inactl.yaml")
	kubetest.Fatal(t, os.WriteFile(path, []byte(data["inactl.yaml"]), 0o600))
	cfg, err := cp.LoadConfig(path)
	if err != nil {
		t.Fatalf("inactl rejects its config: %v", err)
	}
	if len(cfg.Switches) == 0 || cfg.Controller.TokenFile == "" || cfg.Controller.TLS == nil {
		t.Errorf("inactl config: %d switches, token %q, tls %v: want switches, and a token and TLS for an API off loopback",
			len(cfg.Switches), cfg.Controller.TokenFile, cfg.Controller.TLS)
	}
}

// TestSampleJobEnvironment: the sample's pods form one PodGroup gang with the NetPack scheduler,
// and every variable the Python package and torchrun read (python/README.md, operator.Env) is set
// on each worker from an annotation of the contract (kube/gang/annotations.go, rendezvous.go).
// The workers run torchrun, one process per pod, with its node rank, node count and rendezvous
// from those variables, and meet at a headless Service of their namespace that the workers name
// and that selects the label the operator puts on rank 0's pod; on the host network they resolve
// it with ClusterFirstWithHostNet.
func TestSampleJobEnvironment(t *testing.T) {
	objs := render(t, "../../deploy/sample")
	contract := map[string]bool{}
	for _, a := range []string{gang.RankAnnotation, gang.WorldSizeAnnotation, gang.SwitchJobAnnotation, gang.SlotBaseAnnotation,
		gang.WindowAnnotation, gang.PriorityCapAnnotation, gang.PSIPAnnotation, gang.PSMACAnnotation, gang.IPAnnotation, gang.IfaceAnnotation, gang.MemberAnnotation,
		gang.MasterAddrAnnotation, gang.MasterPortAnnotation} {
		contract[a] = true
	}
	pg := find(objs, "PodGroup", "")
	if pg == nil {
		t.Fatal("no PodGroup")
	}
	var group schedulingv1beta1.PodGroup
	kubetest.Fatal(t, runtime.DefaultUnstructuredConverter.FromUnstructured(pg.Object, &group))
	minCount := 0
	if gp := group.Spec.SchedulingPolicy.Gang; gp != nil {
		minCount = int(gp.MinCount)
	}
	var pods []*v1.Pod
	for _, o := range objs {
		if o.GetKind() != "Pod" {
			continue
		}
		var p v1.Pod
		kubetest.Fatal(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p))
		pods = append(pods, &p)
	}
	if minCount != len(pods) {
		t.Errorf("PodGroup %s: minCount %d, %d pods", pg.GetName(), minCount, len(pods))
	}
	var g []*v1.Pod
	workers := 0
	for _, p := range pods {
		if k, ok := gang.KeyOf(p); !ok || k.Name != pg.GetName() || p.Spec.SchedulerName != "inapack-scheduler" {
			t.Errorf("pod %s: gang %v, scheduler %q: want PodGroup %s and inapack-scheduler", p.Name, k, p.Spec.SchedulerName, pg.GetName())
		}
		g = append(g, p)
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
				t.Errorf("pod %s: %s is not from the downward API", p.Name, e.Name)
				continue
			}
			fp := e.ValueFrom.FieldRef.FieldPath
			ann := strings.TrimSuffix(strings.TrimPrefix(fp, "metadata.annotations['"), "']")
			if !contract[ann] {
				t.Errorf("pod %s: %s from %s: not an annotation the operator or the scheduler writes", p.Name, e.Name, fp)
			}
			env[e.Name] = ann
		}
		if p.Labels[gang.RoleLabel] == gang.RolePS {
			continue
		}
		workers++
		want := map[string]string{"RANK": gang.RankAnnotation, "WORLD_SIZE": gang.WorldSizeAnnotation, "INAPACK_JOB": gang.SwitchJobAnnotation,
			"INAPACK_SLOT_BASE": gang.SlotBaseAnnotation, "INAPACK_WINDOW": gang.WindowAnnotation, "INAPACK_PRIORITY": gang.PriorityCapAnnotation,
			"INAPACK_PS_IP": gang.PSIPAnnotation, "INAPACK_PS_MAC": gang.PSMACAnnotation, "INAPACK_IP": gang.IPAnnotation, "INAPACK_IFACE": gang.IfaceAnnotation,
			"INAPACK_MEMBER": gang.MemberAnnotation, "NODE_RANK": gang.RankAnnotation, "NNODES": gang.WorldSizeAnnotation,
			"MASTER_ADDR": gang.MasterAddrAnnotation, "MASTER_PORT": gang.MasterPortAnnotation}
		for k, a := range want {
			if env[k] != a {
				t.Errorf("worker %s: %s from %q, want annotation %s", p.Name, k, env[k], a)
			}
		}
		checkTorchrun(t, objs, p)
	}
	if _, err := gang.Collect(gang.Key{Namespace: g[0].Namespace, Name: pg.GetName()}, g, minCount); err != nil || workers == 0 {
		t.Errorf("the sample is not a gang NetPack can plan (%d workers): %v", workers, err)
	}
}

// checkTorchrun: a sample worker is one torchrun agent and process per pod, its node rank, node
// count and rendezvous the operator's (operator.Env), under backend inapack, meeting at the
// headless Service its pod names, which selects rank 0's pod by the operator's label.
func checkTorchrun(t *testing.T, objs []*unstructured.Unstructured, p *v1.Pod) {
	t.Helper()
	c := p.Spec.Containers[0]
	argv := slices.Concat(c.Command, c.Args)
	for _, want := range []string{"--nnodes=$(NNODES)", "--nproc-per-node=1", "--node-rank=$(NODE_RANK)",
		"--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)", "--backend=inapack"} {
		if !slices.Contains(argv, want) {
			t.Errorf("worker %s: %q lacks %s", p.Name, argv, want)
		}
	}
	if len(argv) == 0 || filepath.Base(argv[0]) != "torchrun" {
		t.Errorf("worker %s runs %q, not torchrun", p.Name, argv)
	}
	svcName := p.Annotations[gang.MasterServiceAnnotation]
	o := find(objs, "Service", svcName)
	if svcName == "" || o == nil || o.GetName() != svcName || o.GetNamespace() != p.Namespace {
		t.Errorf("worker %s names Service %q (%s): want a Service of the sample in namespace %s", p.Name, svcName,
			gang.MasterServiceAnnotation, p.Namespace)
		return
	}
	var svc v1.Service
	kubetest.Fatal(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc))
	if svc.Spec.ClusterIP != v1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses ||
		!maps.Equal(svc.Spec.Selector, map[string]string{gang.MasterLabel: svcName}) {
		t.Errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v, selector %v: want headless, published before ready, "+
			"selecting %s=%s alone", svcName, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses, svc.Spec.Selector, gang.MasterLabel, svcName)
	}
	if p.Spec.HostNetwork && p.Spec.DNSPolicy != v1.DNSClusterFirstWithHostNet {
		t.Errorf("worker %s: host network with dnsPolicy %q: it cannot resolve %s.%s.svc (want %s)", p.Name, p.Spec.DNSPolicy,
			svcName, p.Namespace, v1.DNSClusterFirstWithHostNet)
	}
}
