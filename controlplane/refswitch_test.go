package controlplane

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch"
	"google.golang.org/grpc"
)

// refSwitch is an in-process reference switch serving P4Runtime on a loopback port.
type refSwitch struct {
	sw   *model.Switch
	srv  *grpc.Server
	addr string
}

// startRef serves a fresh reference switch on addr ("127.0.0.1:0" picks a free port).
func startRef(t testing.TB, addr string) *refSwitch {
	t.Helper()
	var lis net.Listener
	var err error
	// The old server's port can take a moment to be free again after Stop.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &refSwitch{sw: model.New(), srv: grpc.NewServer(), addr: lis.Addr().String()}
	refswitch.NewP4RuntimeServer(r.sw, refswitch.WithDeviceID(1), refswitch.WithLogger(quietLog())).Register(r.srv)
	go r.srv.Serve(lis)
	t.Cleanup(r.srv.Stop)
	return r
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(t testing.TB, text string, addrs ...string) *Config {
	t.Helper()
	cfg, err := ParseConfig([]byte(text), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs {
		cfg.Switches[i].Address = a
	}
	return cfg
}

func newController(t testing.TB, cfg *Config) *Controller {
	t.Helper()
	c, err := New(cfg, Options{DefaultP4Info: p4src.P4Info, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
