package refswitch

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	"github.com/mdlayher/packet"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/inapack/inapack/internal/vethtest"
)

// makeVeths creates n veth pairs, switch side and host side, MTU 9500 (see vethtest.Pairs).
func makeVeths(tb testing.TB, prefix string, n int) (sw, host []string) {
	tb.Helper()
	return vethtest.Pairs(tb, prefix, n, 9500)
}

// hostSocket is a raw socket on the host side of a veth that sees only incoming frames.
func hostSocket(tb testing.TB, name string) *packet.Conn {
	tb.Helper()
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
	if err != nil {
		tb.Fatal(err)
	}
	rc, _ := c.SyscallConn()
	_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1) })
	tb.Cleanup(func() { c.Close() })
	return c
}

func sendFrame(tb testing.TB, c *packet.Conn, f []byte) {
	tb.Helper()
	if _, err := c.WriteTo(f, &packet.Addr{HardwareAddr: net.HardwareAddr(f[0:6])}); err != nil {
		tb.Fatal(err)
	}
}

// runSwitch runs Run on the given switch-side interfaces (ports 0..n-1 unless nums is given) and
// returns a primary go-client with the test pipeline pushed, and the stats address.
func runSwitch(tb testing.TB, cfg Config, ifaces []string, nums ...uint16) (*client.Client, string) {
	tb.Helper()
	for i, name := range ifaces {
		n := uint16(i)
		if len(nums) > 0 {
			n = nums[i]
		}
		cfg.Ports = append(cfg.Ports, PortSpec{Port: n, Ifname: name})
	}
	cfg.GRPCAddr, cfg.StatsAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	ready := make(chan [2]string, 1)
	cfg.Ready = func(g, s string) { ready <- [2]string{g, s} }
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cfg) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-errc:
		tb.Fatalf("Run: %v", err)
	}
	conn, err := grpc.NewClient(addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	cl, ok := primary(tb, p4v1.NewP4RuntimeClient(conn), 1)
	if !ok {
		tb.Fatal("not primary")
	}
	if _, err := cl.SetFwdPipeFromBytes(context.Background(), []byte("{}"), testP4Info(tb), 1); err != nil {
		tb.Fatal(err)
	}
	return cl, addrs[1]
}

// recv reads frames until keep accepts one, or fails after a generous deadline.
func recv(tb testing.TB, c *packet.Conn, keep func([]byte) bool) []byte {
	tb.Helper()
	buf := make([]byte, maxFrame)
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		tb.Fatal(err)
	}
	for {
		n, _, err := c.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			tb.Fatal("no frame arrived")
		}
		if err != nil {
			tb.Fatal(err)
		}
		if keep(buf[:n]) {
			return append([]byte(nil), buf[:n]...)
		}
	}
}
