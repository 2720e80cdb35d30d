// Command ina-operator installs the Kubernetes training gangs the NetPack scheduler plugin plans
// on the switches, through the switch controller's job API, and removes them when they end (see
// package operator). It finds the API server as kubectl does (--kubeconfig, $KUBECONFIG, in
// cluster) and the controller at --controller, with its token (--controller-token-file or
// $INACTL_TOKEN) and, for an API served over TLS, its CA.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/kube/operator"
)

func main() {
	ctlAddr := flag.String("controller", cp.DefaultAPIAddress, "the switch controller's job API (host:port or URL)")
	ctlToken := flag.String("controller-token-file", "", "bearer token of the controller's API (default $INACTL_TOKEN)")
	ctlCA := flag.String("controller-ca", "", "CA certificate of the controller's API served over TLS (implies https)")
	topo := flag.String("topology-configmap", "", "NAMESPACE/NAME of the ConfigMap holding topology.json (its hosts are the nodes)")
	topoKey := flag.String("topology-key", "topology.json", "the ConfigMap's key holding topology.json")
	window := flag.Int("window", 16, "aggregator slots per job")
	iface := flag.String("iface", "eth0", "the nodes' interface towards their switch")
	masterPort := flag.Int("master-port-base", 29500, "a gang's torchrun rendezvous port (MASTER_PORT) is this plus its switch job id")
	namespace := flag.String("namespace", "", "only this namespace's pods (default all)")
	leader := flag.Bool("leader-elect", false, "elect one active replica (a Lease named "+operator.Name+")")
	leaderNS := flag.String("leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's)")
	owner := flag.String("owner", "", "owner written on the switch jobs this operator adds; only its own are ever cleaned up "+
		"(default "+operator.Name+", or "+operator.Name+"/NAMESPACE with --namespace; give each operator sharing a controller its own)")
	syncEvery := flag.Duration("sync-interval", 30*time.Second, "how often running gangs are compared with the switch controller's jobs")
	maxRetry := flag.Duration("max-retry-delay", 30*time.Second, "the longest a failed step waits before it is tried again")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:8080", "serve Prometheus metrics at this address's /metrics (0: off); "+
		"an address other than loopback needs --metrics-secure")
	metricsSecure := flag.Bool("metrics-secure", false, "serve the metrics over HTTPS to requests whose bearer token the API server "+
		"authorizes for get on /metrics (TokenReview, SubjectAccessReview)")
	flag.Parse()
	cfg := operator.Config{TopologyKey: *topoKey, Window: *window, Iface: *iface, MasterPortBase: *masterPort, Namespace: *namespace, LeaderElection: *leader,
		LeaderElectionNamespace: *leaderNS, Owner: *owner, SyncInterval: *syncEvery, MaxRetryDelay: *maxRetry,
		MetricsBindAddress: *metricsAddr, MetricsSecure: *metricsSecure}
	if err := run(*ctlAddr, *ctlToken, *ctlCA, *topo, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "ina-operator:", err)
		os.Exit(1)
	}
}

func run(ctlAddr, ctlToken, ctlCA, topo string, cfg operator.Config) error {
	ns, name, ok := strings.Cut(topo, "/")
	if !ok || ns == "" || name == "" {
		return errors.New("--topology-configmap NAMESPACE/NAME is required")
	}
	ctl, err := cli.NewClient(cli.ClientConfig{Addr: ctlAddr, TokenFile: ctlToken, TokenEnv: "INACTL_TOKEN", CA: ctlCA}, api.NewClient)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	rc, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	ctrl.SetLogger(klog.NewKlogr())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	cfg.Controller, cfg.Topology = ctl, types.NamespacedName{Namespace: ns, Name: name}
	return operator.Run(ctx, rc, cfg)
}
