package controlplane

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/mdlayher/packet"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Names of this test's namespaces and veths start with "ct" (unique to the controller tests) and
// end with the test process's id, so two runs at once on one machine (two developers, or go test
// ./... beside a package run) never delete each other's links.
var nsPorts = func() []struct {
	ns, host, sw string
	port         int
} {
	id := os.Getpid() % 100000
	return []struct {
		ns, host, sw string
		port         int
	}{
		{fmt.Sprintf("ctw1-%d", id), fmt.Sprintf("ct-w1-%d", id), fmt.Sprintf("ct-w1s%d", id), 1},
		{fmt.Sprintf("ctw2-%d", id), fmt.Sprintf("ct-w2-%d", id), fmt.Sprintf("ct-w2s%d", id), 2},
		{fmt.Sprintf("ctps-%d", id), fmt.Sprintf("ct-ps-%d", id), fmt.Sprintf("ct-pss%d", id), 3},
	}
}()

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// setupNetns creates one namespace per host with a veth whose other end stays in the root
// namespace for the switch; everything is removed at cleanup, also on failure.
func setupNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root (network namespaces and veths)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: ip (iproute2) not on PATH")
	}
	cleanup := func() {
		for _, p := range nsPorts {
			exec.Command("ip", "link", "del", p.sw).Run()
			exec.Command("ip", "netns", "del", p.ns).Run()
		}
	}
	cleanup()
	t.Cleanup(cleanup)
	for _, p := range nsPorts {
		sh(t, "ip", "netns", "add", p.ns)
		sh(t, "ip", "link", "add", p.sw, "mtu", "9500", "type", "veth", "peer", "name", p.host, "mtu", "9500")
		sh(t, "ip", "link", "set", p.host, "netns", p.ns)
		for _, args := range [][]string{
			{"sysctl", "-qw", "net.ipv6.conf." + p.sw + ".disable_ipv6=1"},
			{"ip", "link", "set", p.sw, "up"},
			{"ip", "netns", "exec", p.ns, "sysctl", "-qw", "net.ipv6.conf." + p.host + ".disable_ipv6=1"},
			{"ip", "-n", p.ns, "link", "set", p.host, "up"},
		} {
			sh(t, args...)
		}
	}
}

// nsSocket opens a raw socket on ifname inside namespace ns. The socket stays bound to that
// namespace's interface after the thread switches back.
func nsSocket(t *testing.T, ns, ifname string) *packet.Conn {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		t.Fatal(err)
	}
	defer netns.Set(orig)
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_IP, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := c.SyscallConn()
	_ = rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1) })
	t.Cleanup(func() { c.Close() })
	return c
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// buildRefswitch compiles cmd/refswitch into a temporary directory.
func buildRefswitch(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("../cmd/refswitch/main.go"); err != nil {
		t.Skip("SKIP: the refswitch command (cmd/refswitch) is not in this tree")
	}
	bin := filepath.Join(t.TempDir(), "refswitch")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, "../cmd/refswitch").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/refswitch: %v: %s", err, out)
	}
	return bin
}

func dataFrame(bit, seq uint32, v int32) []byte {
	f := wire.Frame{
		Addr: wire.Addr{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(bit + 1)}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 3},
			SrcIP: net.IPv4(10, 0, 0, byte(bit+1)), DstIP: net.IPv4(10, 0, 0, 3)},
		TTL: 64, SrcPort: 40000,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Priority: 1, Job: 5, Slot: 3, Seq: seq, Bitmap: 1 << bit},
	}
	for i := range f.INA.Values {
		f.INA.Values[i] = v + int32(i)
	}
	return f.Marshal()
}

// recvINA reads frames until an INA data frame arrives (other traffic is skipped).
func recvINA(t *testing.T, c *packet.Conn) wire.Frame {
	t.Helper()
	buf := make([]byte, 9500)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no INA frame at the PS: %v", err)
		}
		var f wire.Frame
		if f.Unmarshal(buf[:n]) == nil {
			return f
		}
	}
}

// TestNetnsRefswitch runs the refswitch binary on veths, lets the controller configure it over
// P4Runtime (with a bearer token), injects two workers' packets and checks the PS gets their sum
// and the job's counters read back.
func TestNetnsRefswitch(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short")
	}
	setupNetns(t)
	bin := buildRefswitch(t)
	addr := freePort(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("netns-token\n"), 0o600)
	args := []string{"--grpc-addr", addr, "--device-id", "1", "--token-file", tokenFile, "--log-level", "warn"}
	for _, p := range nsPorts {
		args = append(args, "-i", fmt.Sprintf("%d@%s", p.port, p.sw))
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("refswitch stderr:\n%s", stderr.String())
		}
	})

	cfg := testConfig(t, refConfig, addr)
	cfg.Switches[0].TokenFile = tokenFile
	cfg.Switches[0].Settings = nil // ESA mode, all slots
	cfg.Controller.DialTimeout = Duration(10 * time.Second)
	c := newController(t, cfg)
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	checkAggregation(t, c)
}

// checkAggregation injects two workers' packets of job 5 and checks the PS gets their sum and the
// counters read back; then a lone packet claims a slot and removing the job frees it.
func checkAggregation(t *testing.T, c *Controller) {
	t.Helper()
	w1, w2 := nsSocket(t, nsPorts[0].ns, nsPorts[0].host), nsSocket(t, nsPorts[1].ns, nsPorts[1].host)
	ps := nsSocket(t, nsPorts[2].ns, nsPorts[2].host)
	for _, x := range []struct {
		c   *packet.Conn
		bit uint32
		v   int32
	}{{w1, 0, 100}, {w2, 1, 1000}} {
		f := dataFrame(x.bit, 42, x.v)
		if _, err := x.c.WriteTo(f, &packet.Addr{HardwareAddr: f[0:6]}); err != nil {
			t.Fatal(err)
		}
	}
	got := recvINA(t, ps)
	if got.INA.Job != 5 || got.INA.Seq != 42 || got.INA.Bitmap != 3 {
		t.Fatalf("PS got job %d seq %d bitmap %#x, want 5 42 0x3", got.INA.Job, got.INA.Seq, got.INA.Bitmap)
	}
	for i, v := range got.INA.Values {
		if want := int32(1100 + 2*i); v != want {
			t.Fatalf("value %d = %d, want %d", i, v, want)
		}
	}
	snap, err := c.Poll(ctx(t), "s1")
	if err != nil {
		t.Fatal(err)
	}
	ev := snap.JobEvents[5]
	if ev["claimed"] != 1 || ev["completed"] != 1 || ev["collision"] != 0 {
		t.Fatalf("job 5 counters %v, want claimed 1, completed 1", ev)
	}
	if snap.SlotsErr != "" || snap.SlotsHeld[5] != 0 {
		t.Fatalf("job 5 holds %d slots after completion (ESA frees at once); slots error %q", snap.SlotsHeld[5], snap.SlotsErr)
	}
	// A lone contribution holds its slot until the job is removed.
	f := dataFrame(0, 43, 1)
	if _, err := w1.WriteTo(f, &packet.Addr{HardwareAddr: f[0:6]}); err != nil {
		t.Fatal(err)
	}
	st := c.switches["s1"]
	waitFor(t, "the lone packet to claim its slot", func() bool {
		jobs, counts, err := st.slots.ReadSlots(ctx(t))
		return err == nil && len(SlotsOf(jobs, counts, 5)) == 1
	})
	if err := c.RemoveJob(ctx(t), 5); err != nil {
		t.Fatal(err)
	}
	jobs, counts, err := st.slots.ReadSlots(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if held := SlotsOf(jobs, counts, 5); len(held) != 0 {
		t.Fatalf("slots %v still held after removing job 5", held)
	}
}
