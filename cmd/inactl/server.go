package main

import (
	"cmp"
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
	"github.com/inapack/inapack/internal/cli"
	"github.com/inapack/inapack/p4src"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "controller config (YAML)")
}

// load reads and validates the config and prepares the controller (no switch is contacted).
func load(path string, log *slog.Logger) (*cp.Controller, *cp.Config, error) {
	if path == "" {
		return nil, nil, errors.New("--config is required")
	}
	cfg, err := cp.LoadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := cp.New(cfg, cp.Options{DefaultP4Info: p4src.P4Info, Logger: log})
	return c, cfg, err
}

func cmdValidate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ExitOnError)
	path := configFlag(fs)
	fs.Parse(args)
	_, cfg, err := load(*path, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	fmt.Printf("%s: ok (%d switches, %d jobs)\n", *path, len(cfg.Switches), len(cfg.Jobs))
	return nil
}

func cmdApply(args []string) error {
	fs := flag.NewFlagSet("apply", flag.ExitOnError)
	path := configFlag(fs)
	fs.Parse(args)
	c, _, err := load(*path, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var failed []string
	for _, name := range c.Switches() {
		d, err := c.Reconcile(ctx, name)
		if err != nil {
			fmt.Printf("%s: FAILED: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		fmt.Printf("%s: %s\n", name, d)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d switches not applied: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	path := configFlag(fs)
	verbose := fs.Bool("v", false, "debug logging")
	fs.Parse(args)
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	c, cfg, err := load(*path, log)
	if err != nil {
		return err
	}
	cc := cfg.Controller
	token, err := cli.ReadToken(cc.TokenFile, "INACTL_TOKEN")
	if err != nil {
		return err
	}
	apiAddr, metricsAddr := cmp.Or(cc.APIAddress, cp.DefaultAPIAddress), cmp.Or(cc.MetricsAddress, cp.DefaultMetrics)
	useTLS := cc.TLS != nil && cc.TLS.Cert != ""
	for _, a := range []string{apiAddr, metricsAddr} {
		if err := api.CheckExposure(a, token, useTLS); err != nil {
			return err
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collector())
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	var metricsHandler http.Handler = metrics
	if !cp.IsLoopback(metricsAddr) {
		metricsHandler = api.RequireToken(metrics, token, log)
	}
	servers := []*http.Server{
		{Addr: apiAddr, Handler: api.Handler(c, token, log), ReadHeaderTimeout: 10 * time.Second},
		{Addr: metricsAddr, Handler: metricsHandler, ReadHeaderTimeout: 10 * time.Second},
	}
	lis := make([]net.Listener, len(servers))
	for i, s := range servers {
		if lis[i], err = net.Listen("tcp", s.Addr); err != nil {
			return err
		}
		log.Info("listening", "address", s.Addr, "tls", useTLS)
	}
	runDone := make(chan struct{})
	go func() { c.Run(ctx); close(runDone) }()
	var cert, key string
	if useTLS {
		cert, key = cc.TLS.Cert, cc.TLS.Key
	}
	err = cli.Serve(ctx, servers, lis, cert, key)
	cancel()
	<-runDone
	return err
}
