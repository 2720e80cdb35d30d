// Package kubetest starts a real Kubernetes control plane in the test's process: an embedded
// etcd, kube-apiserver and kube-scheduler (with the NetPack plugin, or stock with an extender).
// There is no controller-manager and no kubelet: the tests create Node objects themselves, and
// kube/noderunner plays the kubelet's part for emulated hosts.
package kubetest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apitesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// API is a kube-apiserver on an embedded etcd. The GenericWorkload gate is on and
// scheduling.k8s.io/v1beta1 (PodGroups) is served; the RBAC authorizer is on, as on a real
// cluster (Config is the loopback admin, system:masters; As gives a ServiceAccount's view); the
// ServiceAccount and TaintNodesByCondition admission plugins are off (no controller-manager makes
// service accounts or clears the not-ready taint of new Nodes).
type API struct {
	Config     *rest.Config
	Client     kubernetes.Interface
	Kubeconfig string // a kubeconfig file for Config, for components that read one
	storage    *storagebackend.Config
	stop       func()
}

// Flags are the API server's flags beyond the test server's defaults.
var Flags = []string{
	"--authorization-mode=RBAC",
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	"--feature-gates=GenericWorkload=true",
	"--runtime-config=scheduling.k8s.io/v1beta1=true",
}

// StartAPI starts etcd and the API server; both stop when the test ends.
func StartAPI(t testing.TB) *API {
	t.Helper()
	_, sc := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	a := &API{storage: sc}
	a.start(t)
	t.Cleanup(func() { a.stop() })
	return a
}

func (a *API) start(t testing.TB) {
	t.Helper()
	opts := apitesting.NewDefaultTestServerOptions()
	// The shutdown self-check scrapes the server's metrics and times out on a loaded machine,
	// failing a test that passed.
	opts.DisableInvariantChecks = true
	srv, err := apitesting.StartTestServer(t, opts, Flags, a.storage)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	a.stop = srv.TearDownFn
	a.Config = rest.CopyConfig(srv.ClientConfig)
	a.Config.QPS, a.Config.Burst = 200, 400
	a.Client = kubernetes.NewForConfigOrDie(a.Config)
	// RBAC's bootstrap roles are written by a post-start hook that kills the process if the
	// server stops before it is done (a Restart, a short test): wait for it.
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := a.Client.Discovery().RESTClient().Get().AbsPath("/healthz/poststarthook/rbac/bootstrap-roles").DoRaw(ctx)
		return err == nil, nil
	})
	if err != nil {
		srv.TearDownFn()
		t.Fatalf("kube-apiserver: RBAC's bootstrap roles not written within 2 minutes: %v", err)
	}
	a.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(a.Config, a.Kubeconfig); err != nil {
		t.Fatal(err)
	}
}

// Restart stops the API server and starts another on the same etcd (a new port: clients made
// from the old Config must be made again, as after a real API server's address change).
func (a *API) Restart(t testing.TB) {
	t.Helper()
	a.stop()
	a.start(t)
}

// As is a client config that acts as ServiceAccount namespace/name: the admin impersonates the
// account's user and groups, so the RBAC authorizer judges every request as the account's own.
func (a *API) As(namespace, name string) *rest.Config {
	c := rest.CopyConfig(a.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(namespace, name),
		Groups: serviceaccount.MakeGroupNames(namespace)}
	return c
}

// KubeconfigAs writes a kubeconfig file for As(namespace, name) (for components that read one).
func (a *API) KubeconfigAs(t testing.TB, namespace, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig-"+namespace+"-"+name)
	if err := WriteKubeconfig(a.As(namespace, name), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteKubeconfig writes c as a kubeconfig file (with its impersonation, if any).
func WriteKubeconfig(c *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData,
		InsecureSkipTLSVerify: c.Insecure, TLSServerName: c.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: c.BearerToken, ClientCertificateData: c.CertData, ClientKeyData: c.KeyData,
		Impersonate: c.Impersonate.UserName, ImpersonateGroups: c.Impersonate.Groups}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

// SchedulerConfig is a KubeSchedulerConfiguration (YAML) for a scheduler on api: leader election
// off, and profiles as given (the YAML list under "profiles:", indented by two spaces), extenders
// likewise ("" for none).
func SchedulerConfig(api *API, profiles, extenders string) string {
	s := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
profiles:
%s
`, api.Kubeconfig, profiles)
	if extenders != "" {
		s += "extenders:\n" + extenders + "\n"
	}
	return s
}

// NetPackProfile is a scheduler profile (for SchedulerConfig) named inapack-scheduler that enables
// the NetPack plugin with args, YAML lines of its arguments ("rtt: 1ms", ...), and disables
// Kubernetes' own GangScheduling, as deploy/scheduler's profile does.
func NetPackProfile(args ...string) string {
	s := `  - schedulerName: inapack-scheduler
    plugins:
      multiPoint:
        enabled:
          - name: NetPack
        disabled:
          - name: GangScheduling
    pluginConfig:
      - name: NetPack
        args:`
	for _, a := range args {
		s += "\n          " + a
	}
	return s
}

// StartScheduler runs kube-scheduler in process with config (SchedulerConfig) and the given
// out-of-tree plugins until ctx ends or the test does. The secure port is off.
func StartScheduler(ctx context.Context, t testing.TB, config string, plugins ...app.Option) {
	t.Helper()
	StartStoppableScheduler(ctx, t, config, plugins...)
}
