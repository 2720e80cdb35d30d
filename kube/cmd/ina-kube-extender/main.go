// Command ina-kube-extender serves NetPack as a kube-scheduler extender (filter, prioritize, bind)
// for clusters that keep the stock kube-scheduler; ina-kube-scheduler (the plugin) is the other
// way. See kube/extender/README.md and deploy/extender.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/kube/extender"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/netpack"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ina-kube-extender:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("ina-kube-extender", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:9580", "extender address (kube-scheduler's urlPrefix)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (default: in-cluster, the pod's service account)")
	policy := fs.String("policy", "netpack", "placement policy: "+strings.Join(netpack.PolicyNames(), ", "))
	nic := fs.Float64("nic-gbps", 0, "a node's NIC in Gbit/s unless annotated "+gang.NICAnnotation+" (default 100)")
	uplink := fs.Float64("uplink-gbps", 0, "each rack's uplink in Gbit/s (default 200)")
	core := fs.Float64("core-gbps", 0, "the core in Gbit/s (default: every uplink)")
	mem := fs.Float64("ina-memory-bytes", 0, "aggregator memory per ToR (default netpack's)")
	rtt := fs.Duration("rtt", 0, "how long a slot is held (default netpack's)")
	gangTimeout := fs.Duration("gang-timeout", time.Minute, "how long a gang's pods have to all reach bind before it is planned again")
	readyTimeout := fs.Duration("ready-timeout", time.Minute, "how long a bind waits for the operator to install the gang")
	waitOperator := fs.Bool("wait-for-operator", true, "bind a gang's pods only once the operator marks them "+gang.ReadyAnnotation+" (false: placement only)")
	tlsCert := fs.String("tls-cert", "", "TLS certificate (required off loopback)")
	tlsKey := fs.String("tls-key", "", "TLS key")
	clientCA := fs.String("client-ca", "", "CA of kube-scheduler's client certificate (required off loopback: kube-scheduler sends extenders no token)")
	fs.Parse(args)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if !cp.IsLoopback(*listen) && (*tlsCert == "" || *tlsKey == "" || *clientCA == "") {
		return fmt.Errorf("address %s is not loopback: --tls-cert, --tls-key and --client-ca are required", *listen)
	}
	var rc *rest.Config
	var err error
	if *kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("API server: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	e, err := extender.New(ctx, cs, extender.Config{
		Model:       gang.Config{Policy: *policy, NICGbps: *nic, UplinkGbps: *uplink, CoreGbps: *core, INAMemoryBytes: *mem, RTT: *rtt},
		GangTimeout: *gangTimeout, ReadyTimeout: *readyTimeout, WaitForOperator: *waitOperator}, log)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: 10 * time.Second}
	if *clientCA != "" {
		pool, err := api.CertPool(*clientCA)
		if err != nil {
			return fmt.Errorf("--client-ca: %w", err)
		}
		srv.TLSConfig = &tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("extender listening", "address", lis.Addr().String(), "tls", *tlsCert != "")
	return cli.Serve(ctx, []*http.Server{srv}, []net.Listener{lis}, *tlsCert, *tlsKey)
}
