package refswitch

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/inapack/inapack/p4src/model"
)

// Run serves the reference switch until ctx ends: the model on the configured ports and the
// P4Runtime server on cfg.GRPCAddr. SIGUSR1 logs the switch's counters.
func Run(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	log := cfg.Logger
	sw := cfg.Switch
	if sw == nil {
		sw = model.New()
	}
	d := &dataplane{sw: sw, log: log, ports: map[uint16]*port{}}
	var live *liveFaults
	if cfg.FaultAPI {
		live = newLiveFaults(cfg.Faults)
	}
	defer func() {
		for _, p := range d.ports {
			p.sock.Close()
		}
	}()
	for _, spec := range cfg.Ports {
		p, err := openPort(spec, cfg.QueueLen, cfg.Ring)
		if err != nil {
			return err
		}
		d.ports[spec.Port] = p
		if mbps, ok := cfg.Rates[spec.Port]; ok {
			p.shaper = newShaper(mbps)
		}
		if cfg.Faults.active() || live != nil {
			p.faults = newInjector(cfg.Faults, spec.Port, &p.st)
			p.live = live
		}
		log.Info("port attached", "port", spec.Port, "interface", spec.Ifname, "rate_mbps", cfg.Rates[spec.Port])
	}

	srv := NewP4RuntimeServer(sw, WithDeviceID(cfg.DeviceID), WithLogger(log), OnCommit(func() { d.configured.Store(true) }))
	g, err := newGRPCServer(cfg)
	if err != nil {
		return err
	}
	srv.Register(g)
	lis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("gRPC listen on %s: %w", cfg.GRPCAddr, err)
	}
	statsAddr := ""
	var hs *http.Server
	if cfg.StatsAddr != "" {
		sl, err := net.Listen("tcp", cfg.StatsAddr)
		if err != nil {
			lis.Close()
			return fmt.Errorf("stats listen on %s: %w", cfg.StatsAddr, err)
		}
		statsAddr = sl.Addr().String()
		mux := d.statsHandler()
		if live != nil {
			live.register(mux)
		}
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(sl) }()
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.start(ctx)
	serveErr := make(chan error, 1)
	go func() { serveErr <- g.Serve(lis) }()
	log.Info("reference switch serving", "grpc", lis.Addr().String(), "device_id", cfg.DeviceID, "ports", len(d.ports), "stats", statsAddr)
	if cfg.Ready != nil {
		cfg.Ready(lis.Addr().String(), statsAddr)
	}

	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	for {
		select {
		case <-usr1:
			logStats(d)
		case err := <-serveErr:
			cancel()
			d.wg.Wait()
			return fmt.Errorf("gRPC server: %w", err)
		case <-ctx.Done():
			stopGRPC(g)
			if hs != nil {
				_ = hs.Close()
			}
			d.wg.Wait()
			logStats(d)
			return nil
		}
	}
}

func logStats(d *dataplane) {
	s := d.stats()
	d.log.Info("switch counters", "pipeline_configured", s.Configured, "no_pipeline_drops", s.NoPipelineDrops, "no_port_drops", s.NoPortDrops)
	for _, p := range s.Ports {
		d.log.Info("port counters", "port", p.Port, "interface", p.Interface, "rx", p.RxPackets, "tx", p.TxPackets,
			"tail_drops", p.TailDrops, "rx_errors", p.RxErrors, "tx_errors", p.TxErrors,
			"fault_lost", p.FaultLost, "fault_duplicated", p.FaultDuplicated, "fault_reordered", p.FaultReordered,
			"kernel_drops", p.KernelDrops, "rx_truncated", p.RxTruncated, "vlan_tagged", p.VLANTagged)
	}
}

// stopGRPC ends open streams after a short grace period.
func stopGRPC(g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		g.Stop()
	}
}

func newGRPCServer(cfg Config) (*grpc.Server, error) {
	var opts []grpc.ServerOption
	if cfg.TLSCert != "" {
		creds, err := credentials.NewServerTLSFromFile(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	if cfg.Token != "" {
		check := tokenCheck(cfg.Token)
		opts = append(opts,
			grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := check(ctx); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := check(ss.Context()); err != nil {
					return err
				}
				return h(srv, ss)
			}))
	}
	return grpc.NewServer(opts...), nil
}

// tokenCheck admits calls carrying "authorization: Bearer <token>".
func tokenCheck(token string) func(context.Context) error {
	want := []byte("Bearer " + token)
	return func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		for _, v := range md.Get("authorization") {
			if subtle.ConstantTimeCompare([]byte(v), want) == 1 {
				return nil
			}
		}
		return status.Error(codes.Unauthenticated, "missing or wrong bearer token")
	}
}
