// Command refswitch runs the reference switch: the Go model of the INA P4 program on Linux
// interfaces, driven over P4Runtime like simple_switch_grpc.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/inapack/inapack/refswitch"
)

// repeated collects a repeatable string flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "refswitch:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var ports, rates repeated
	var cfg refswitch.Config
	var level, tokenFile string
	fs := flag.NewFlagSet("refswitch", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: refswitch -i N@ifname [-i N@ifname ...] [flags]")
		fs.PrintDefaults()
	}
	fs.Var(&ports, "i", "attach switch port N to interface ifname: N@ifname (repeatable; N in 0..511)")
	fs.Var(&rates, "rate", "limit port N's egress to a link of the given Mbit/s: N@mbps (repeatable)")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", refswitch.DefaultGRPCAddr, "P4Runtime gRPC listen address")
	fs.Uint64Var(&cfg.DeviceID, "device-id", 1, "P4Runtime device id")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate file for gRPC")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key file for gRPC")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "allow plaintext gRPC on a non-loopback address")
	fs.StringVar(&tokenFile, "token-file", "", "file holding a bearer token every P4Runtime call must carry")
	fs.Float64Var(&cfg.Faults.Loss, "loss", 0, "egress packet loss probability")
	fs.Float64Var(&cfg.Faults.Dup, "dup", 0, "egress packet duplication probability")
	fs.Float64Var(&cfg.Faults.Reorder, "reorder", 0, "egress reordering probability (a packet is sent after the next one)")
	fs.Float64Var(&cfg.Faults.Corrupt, "corrupt", 0, "egress corruption probability per INA frame (one bit of one value flipped after the checksums)")
	fs.Uint64Var(&cfg.Faults.Seed, "seed", 1, "seed of the fault injection (same seed and traffic, same faults)")
	fs.IntVar(&cfg.QueueLen, "queue-len", refswitch.DefaultQueueLen, "egress queue bound per port, in packets (tail drop beyond)")
	fs.StringVar(&cfg.StatsAddr, "stats-addr", "", "loopback address serving the switch's counters as JSON at /stats")
	fs.BoolVar(&cfg.FaultAPI, "fault-api", false, "also serve GET/PUT /faults on --stats-addr: change the fault rates while running (chaos runs)")
	fs.StringVar(&level, "log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("--log-level %q: %w", level, err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	for _, s := range ports {
		p, err := refswitch.ParsePort(s)
		if err != nil {
			return fmt.Errorf("-i: %w", err)
		}
		cfg.Ports = append(cfg.Ports, p)
	}
	cfg.Rates = map[uint16]float64{}
	for _, s := range rates {
		p, mbps, err := refswitch.ParseRate(s)
		if err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		cfg.Rates[p] = mbps
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		if cfg.Token = strings.TrimSpace(string(b)); cfg.Token == "" {
			return fmt.Errorf("--token-file %s is empty", tokenFile)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return refswitch.Run(ctx, cfg)
}
