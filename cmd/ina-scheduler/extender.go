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

	v1 "k8s.io/api/core/v1"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/scheduler"
	"github.com/inapack/inapack/scheduler/extender"
)

// cmdExtender serves the kube-scheduler extender.
func cmdExtender(args []string) error {
	fs := flag.NewFlagSet("extender", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:9580", "extender address (kube-scheduler's urlPrefix)")
	apiserver := fs.String("apiserver", "", "Kubernetes API server URL (default: in-cluster, from the pod's service account)")
	apiToken := fs.String("apiserver-token-file", "", "bearer token for the API server (in-cluster: the service account's)")
	apiCA := fs.String("apiserver-ca", "", "CA of the API server (in-cluster: the service account's)")
	policy := fs.String("policy", "netpack", "placement policy: "+strings.Join(scheduler.Policies(), ", "))
	jobLabel := fs.String("job-label", extender.DefaultJobLabel, "pod label whose value names the pod's job")
	rackLabel := fs.String("rack-label", extender.DefaultRackLabel, "node label naming the node's rack")
	gpu := fs.String("gpu-resource", string(extender.DefaultGPU), "extended resource counted as GPUs")
	nic := fs.Float64("nic-gbps", 100, "node NIC Gbit/s (annotation "+extender.NICAnnotation+" overrides)")
	uplink := fs.Float64("uplink-gbps", 200, "each rack's uplink Gbit/s")
	core := fs.Float64("core-gbps", 0, "core Gbit/s (default: every uplink)")
	mem := fs.Float64("ina-memory-bytes", 0, "INA memory per ToR (default 256 KiB)")
	rtt := fs.Duration("rtt", 20*time.Microsecond, "slot hold time")
	tlsCert := fs.String("tls-cert", "", "TLS certificate (required off loopback)")
	tlsKey := fs.String("tls-key", "", "TLS key")
	clientCA := fs.String("client-ca", "", "CA that signed kube-scheduler's client certificate (required off loopback: kube-scheduler sends no token, so it proves itself with its certificate)")
	fs.Parse(args)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if !cp.IsLoopback(*listen) && (*tlsCert == "" || *tlsKey == "" || *clientCA == "") {
		return fmt.Errorf("extender address %s is not loopback: --tls-cert, --tls-key and --client-ca are required", *listen)
	}
	src, err := extender.NewAPIServer(*apiserver, *apiToken, *apiCA)
	if err != nil {
		return err
	}
	e := extender.New(extender.Config{JobLabel: *jobLabel, RackLabel: *rackLabel, GPUResource: v1.ResourceName(*gpu),
		Policy: *policy, NICGbps: *nic, UplinkGbps: *uplink, CoreGbps: *core, INAMemoryBytes: *mem, RTT: *rtt}, src, log)
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
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	log.Info("extender listening", "address", lis.Addr().String(), "tls", *tlsCert != "", "policy", *policy)
	return cli.Serve(ctx, []*http.Server{srv}, []net.Listener{lis}, *tlsCert, *tlsKey)
}
