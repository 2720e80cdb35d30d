package main

import (
	"context"
	"errors"
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

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/scheduler"
)

// DefaultAPIAddress is where the scheduler serves by default (the controller takes 9560/9561).
const DefaultAPIAddress = "127.0.0.1:9570"

func cmdServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	topoPath := fs.String("topology", "", "topology.json: hosts with \"gpus\", switches, links with bandwidth, ina settings")
	hostsPath := fs.String("hosts", "", `JSON object: host -> {"netns": NAME} or {"pid": PID} (and "iface", default eth0)`)
	ctlAddr := fs.String("controller", cp.DefaultAPIAddress, "the switch controller's job API (host:port or URL)")
	ctlToken := fs.String("controller-token-file", "", "bearer token of the controller's API (default $INACTL_TOKEN)")
	ctlCA := fs.String("controller-ca", "", "CA certificate of the controller's API served over TLS")
	policy := fs.String("policy", "netpack", "placement policy: "+strings.Join(scheduler.Policies(), ", "))
	stateDir := fs.String("state", "build/scheduler", "state directory: state.json and the agents' logs")
	bin := fs.String("bin", "build/bin", "directory of ina-ps and ina-worker")
	listen := fs.String("listen", DefaultAPIAddress, "job API address")
	tokenFile := fs.String("token-file", "", "bearer token required on the job API (default $INA_SCHEDULER_TOKEN); required off loopback")
	tlsCert := fs.String("tls-cert", "", "TLS certificate of the job API (required off loopback)")
	tlsKey := fs.String("tls-key", "", "TLS key of the job API")
	window := fs.Int("window", 16, "aggregator slots per job")
	rtt := fs.Duration("rtt", time.Millisecond, "slot hold time in NetPack's model: INA capacity = slots x 256 B / rtt")
	defMbps := fs.Float64("default-mbps", 1000, "capacity NetPack assumes for links without a bandwidth")
	threads := fs.Int("threads", 0, "the agents' -threads (per job, the largest power of two up to it dividing the job's window); 0: each agent's own default, one thread per four of its host's cores")
	progress := fs.Duration("progress-timeout", 10*time.Second, "workers fail when no chunk completes for this long")
	seed := fs.Uint64("seed", 1, "seed of the workers' tensors (every result is checked exactly)")
	verbose := fs.Bool("v", false, "debug logging")
	fs.Parse(args)
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *topoPath == "" || *hostsPath == "" {
		return errors.New("serve needs --topology and --hosts")
	}
	token, err := cli.ReadToken(*tokenFile, "INA_SCHEDULER_TOKEN")
	if err != nil {
		return err
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	useTLS := *tlsCert != ""
	if err := api.CheckExposure(*listen, token, useTLS); err != nil {
		return err
	}
	topo, err := topology.Load(*topoPath)
	if err != nil {
		return err
	}
	cluster, err := scheduler.NewCluster(topo, scheduler.ClusterParams{DefaultMbps: *defMbps, RTT: *rtt})
	if err != nil {
		return fmt.Errorf("%s: %w", *topoPath, err)
	}
	hosts, err := scheduler.LoadHosts(*hostsPath)
	if err != nil {
		return err
	}
	ctl, err := cli.NewClient(cli.ClientConfig{Addr: *ctlAddr, TokenFile: *ctlToken, TokenEnv: "INACTL_TOKEN", CA: *ctlCA}, api.NewClient)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	svc, err := scheduler.New(scheduler.Config{Cluster: cluster, Hosts: hosts, Controller: ctl, Policy: *policy,
		Bin: *bin, StateDir: *stateDir, Window: *window, ProgressTimeout: *progress, Threads: *threads, Seed: *seed, Logger: log})
	if err != nil {
		return err
	}
	defer svc.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: scheduler.Handler(svc, token, log), ReadHeaderTimeout: 10 * time.Second}
	log.Info("scheduler listening", "address", lis.Addr().String(), "tls", useTLS, "policy", *policy,
		"machines", len(cluster.Hosts), "gpus", cluster.Model.TotalGPUs())
	// Agents keep running after this returns: a restarted scheduler re-attaches to them.
	return cli.Serve(ctx, []*http.Server{srv}, []net.Listener{lis}, *tlsCert, *tlsKey)
}
