package ipdrop_test

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/internal/ipdrop"
	"github.com/inapack/inapack/internal/vethtest"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// An emulated host's agent still receives every frame addressed to it once the drop is in place,
// its IP stack takes in none of them (before the drop it took in each one), and its loopback still
// works.
func TestAgentReceivesWhatTheStackNeverSees(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: network namespaces and veth pairs need root")
	}
	runtime.LockOSThread() // netns.Set moves this thread only
	defer runtime.UnlockOSThread()
	root, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	name := fmt.Sprintf("ipdrop%d", os.Getpid())
	_ = netns.DeleteNamed(name) // left by a killed earlier process with our PID
	host, err := netns.NewNamed(name)
	if err != nil {
		t.Skipf("SKIP: cannot create a network namespace: %v", err)
	}
	t.Cleanup(func() { host.Close(); _ = netns.DeleteNamed(name) })
	if err := netns.Set(root); err != nil {
		t.Fatal(err)
	}
	sw, eth := vethtest.Pair(t, "ipd", 0)
	l, err := netlink.LinkByName(eth)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetNsFd(l, int(host)); err != nil {
		t.Fatal(err)
	}
	in := inNamespace(t, root, host)
	var agent *transport.Packet
	var mac net.HardwareAddr
	in(func() {
		h, err := netlink.NewHandle()
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		lo, err := h.LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(lo); err != nil {
			t.Fatal(err)
		}
		l, err := h.LinkByName(eth)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); l.Attrs().OperState != netlink.OperUp; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not come up in the namespace", eth)
			}
			if l, err = h.LinkByName(eth); err != nil {
				t.Fatal(err)
			}
		}
		if agent, err = transport.OpenPacket(eth); err != nil { // the agents' transport
			t.Fatal(err)
		}
		mac = l.Attrs().HardwareAddr
	})
	defer agent.Close()
	tx, err := afring.Open(sw, afring.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	taken := func() int { // the frames the namespace's IP stack took in
		var n int
		in(func() { n = ipCounters(t)["InReceives"] })
		return n
	}

	const frames = 50
	send := func() (received, takenNow int) {
		before := taken()
		f := wire.Frame{Addr: wire.Addr{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: mac,
			SrcIP: net.IPv4(10, 0, 0, 2), DstIP: net.IPv4(10, 0, 0, 1)}, TTL: 64, SrcPort: wire.UDPPort,
			INA: wire.Header{Version: wire.Version, Type: wire.TypeResult, Job: 1}}
		buf := make([]byte, wire.FrameLen)
		for i := range frames {
			f.INA.Seq = uint32(i)
			if err := f.MarshalTo(buf); err != nil {
				t.Fatal(err)
			}
			if err := tx.Send(buf); err != nil {
				t.Fatal(err)
			}
		}
		rx := make([]byte, 2048)
		for deadline := time.Now().Add(2 * time.Second); received < frames; received++ {
			if _, err := agent.Recv(rx, deadline); err != nil {
				break
			}
		}
		return received, taken() - before
	}

	got, r := send()
	if got != frames || r < frames {
		t.Fatalf("without the drop: the agent received %d of %d frames and the IP stack took in %d; want all, and each", got, frames, r)
	}
	if err := ipdrop.Namespaces([]string{name}, eth); err != nil {
		t.Fatal(err)
	}
	if got, r := send(); got != frames || r != 0 {
		t.Fatalf("with the drop: the agent received %d of %d frames and the IP stack took in %d; want all, and none", got, frames, r)
	}
	in(func() { // what runs inside the host still has its loopback
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.WriteTo([]byte("ping"), c.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, _, err := c.ReadFrom(make([]byte, 16)); err != nil {
			t.Fatalf("with the drop, a datagram to itself on the namespace's loopback: %v", err)
		}
	})
}

// inNamespace returns a function that runs fn on this (locked) thread inside host.
func inNamespace(t *testing.T, root, host netns.NsHandle) func(fn func()) {
	return func(fn func()) {
		if err := netns.Set(host); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := netns.Set(root); err != nil {
				panic(err) // the thread would stay in the namespace
			}
		}()
		fn()
	}
}

// ipCounters reads the Ip: counters of /proc/net/snmp in this thread's namespace.
func ipCounters(t *testing.T) map[string]int {
	b, err := os.ReadFile("/proc/thread-self/net/snmp")
	if err != nil {
		t.Fatal(err)
	}
	var names, values []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "Ip:" {
			if names == nil {
				names = f[1:]
			} else {
				values = f[1:]
			}
		}
	}
	m := map[string]int{}
	for i := range min(len(names), len(values)) {
		m[names[i]], _ = strconv.Atoi(values[i])
	}
	return m
}
