package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/p4src"
)

// startRing runs the bare forwarder (serveRing) in a child process, as the switches run.
func startRing(ctx context.Context, sw []string) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startChild(self, append([]string{"ring"}, sw...))
}

// serveRing is the bare forwarder: per port, frames read from its RX ring go to the next port's
// TX ring, one send per batch, untouched. No switch on these veths can be faster. It prints
// "ready" once its sockets are open and runs until SIGTERM.
func serveRing(sw []string) error {
	stop, err := ringForward(sw)
	if err != nil {
		return err
	}
	untilSignal(stop)
	return nil
}

func ringForward(sw []string) (func(), error) {
	n := len(sw)
	socks := make([]*afring.Socket, n)
	for i, name := range sw {
		s, err := afring.Open(name, afring.Config{Promiscuous: true, FrameSize: 16384, RXFrames: 1024, TXFrames: 256})
		if err != nil {
			for _, o := range socks[:i] {
				o.Close()
			}
			return nil, err
		}
		socks[i] = s
	}
	var wg sync.WaitGroup
	for i, s := range socks {
		out := socks[next(i, n)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := s.Receive(-1, 64, func(f []byte) { _ = out.Queue(f) }); err != nil {
					return
				}
				_ = out.Flush()
			}
		}()
	}
	return func() {
		for _, s := range socks {
			s.Close()
		}
		wg.Wait()
	}, nil
}

func (o forwardOpts) startRef(ctx context.Context, sw []string) (func(), error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := []string{filepath.Join(o.bin, "refswitch"), "--grpc-addr", addr, "--device-id", "1", "--log-level", "warn"}
	for i, s := range sw {
		argv = append(argv, "-i", fmt.Sprintf("%d@%s", i, s))
	}
	return runProgrammed(ctx, argv, addr, []byte("{}"), p4src.P4Info, len(sw))
}

// findBMv2 returns the simple_switch_grpc and the JSON to use, or why BMv2 is skipped.
func (o forwardOpts) findBMv2() (bin, json, why string) {
	bin = o.bmv2
	if bin == "" {
		if _, err := os.Stat("/opt/p4-perf/bin/simple_switch_grpc"); err == nil {
			bin = "/opt/p4-perf/bin/simple_switch_grpc"
		} else if p, err := exec.LookPath("simple_switch_grpc"); err == nil {
			bin = p
		} else {
			return "", "", "simple_switch_grpc not installed (BMv2; see ../shared/toolchains/README.md)"
		}
	}
	if _, err := os.Stat(o.bmv2JSON); err != nil {
		return "", "", fmt.Sprintf("no compiled program %s (make p4 needs p4c)", o.bmv2JSON)
	}
	return bin, o.bmv2JSON, ""
}

func (o forwardOpts) bmv2Starter(bin, json string) func(context.Context, []string) (func(), error) {
	return func(ctx context.Context, sw []string) (func(), error) {
		addr, err := procs.FreeAddr()
		if err != nil {
			return nil, err
		}
		thrift, err := procs.FreeAddr()
		if err != nil {
			return nil, err
		}
		_, tport, _ := net.SplitHostPort(thrift)
		argv := []string{bin, "--no-p4", "--device-id", "1", "--thrift-port", tport}
		for i, s := range sw {
			argv = append(argv, "-i", fmt.Sprintf("%d@%s", i, s))
		}
		argv = append(argv, "--", "--grpc-server-addr", addr, "--cpu-port", "255")
		cfg, err := os.ReadFile(json)
		if err != nil {
			return nil, err
		}
		info, err := os.ReadFile(filepath.Join(filepath.Dir(json), "ina.p4info.txtpb"))
		if err != nil {
			return nil, err
		}
		return runProgrammed(ctx, argv, addr, cfg, info, len(sw))
	}
}

// runProgrammed starts a switch process, pushes the pipeline and routes 10.0.i.0/24 to port i
// with the host's MAC, and returns a function that stops the process.
func runProgrammed(ctx context.Context, argv []string, addr string, cfg, p4info []byte, ports int) (func(), error) {
	logf, err := os.CreateTemp("", "ina-bench-switch-*.log")
	if err != nil {
		return nil, err
	}
	logf.Close()
	p, err := procs.Start(filepath.Base(argv[0]), logf.Name(), procs.Options{}, argv...)
	if err != nil {
		os.Remove(logf.Name())
		return nil, err
	}
	stop := func() {
		p.Stop(3 * time.Second)
		os.Remove(p.Log)
	}
	if err := program(ctx, p, addr, cfg, p4info, ports); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

func program(ctx context.Context, p *procs.Proc, addr string, cfg, p4info []byte, ports int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := procs.WaitTCP(ctx, addr, p); err != nil {
		return fmt.Errorf("no P4Runtime server: %w", err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	go func() { <-p.Done(); conn.Close() }()
	cl := client.NewClient(p4v1.NewP4RuntimeClient(conn), 1, &p4v1.Uint128{Low: 1})
	arb := make(chan bool, 8)
	go func() { _ = cl.Run(ctx.Done(), arb, make(chan *p4v1.StreamMessageResponse, 8)) }()
	select {
	case ok := <-arb:
		if !ok {
			return fmt.Errorf("not primary")
		}
	case <-ctx.Done():
		return fmt.Errorf("no arbitration: %w", ctx.Err())
	}
	if _, err := cl.SetFwdPipeFromBytes(ctx, cfg, p4info, 1); err != nil {
		return fmt.Errorf("pipeline push: %w", err)
	}
	info, err := p4src.ParseP4Info(p4info)
	if err != nil {
		return err
	}
	var table, action string
	for _, t := range info.Tables {
		if strings.HasSuffix(t.Preamble.Name, ".ipv4_lpm") {
			table = t.Preamble.Name
		}
	}
	for _, a := range info.Actions {
		if strings.HasSuffix(a.Preamble.Name, ".ipv4_forward") {
			action = a.Preamble.Name
		}
	}
	for i := range ports {
		e := cl.NewTableEntry(table, map[string]client.MatchInterface{
			"hdr.ipv4.dst_addr": &client.LpmMatch{Value: []byte{10, 0, byte(i), 0}, PLen: 24}},
			cl.NewTableActionDirect(action, [][]byte{hostMAC(i), {0, byte(i)}}), nil)
		if err := cl.InsertTableEntry(ctx, e); err != nil {
			return fmt.Errorf("route to port %d: %w", i, err)
		}
	}
	return nil
}
