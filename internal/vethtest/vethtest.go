// Package vethtest makes veth pairs for tests that need real interfaces.
package vethtest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// Pairs creates n veth pairs named <tag><pid><i>a and <tag><pid><i>b: named after the test
// process, so that concurrent runs on one machine never touch each other's. Each side is up with
// IPv6 off (so the kernel sends nothing on it) and its carrier on, with the MTU given (0: the
// kernel's default). The pairs are deleted when tb ends. Without root, tb is skipped.
func Pairs(tb testing.TB, tag string, n, mtu int) (a, b []string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("SKIP: veth pairs need root")
	}
	for i := range n {
		base := fmt.Sprintf("%s%d%d", tag, os.Getpid()%100000, i)
		if len(base)+1 > 15 {
			tb.Fatalf("veth name %sa: longer than the kernel's 15 characters", base)
		}
		x, y := base+"a", base+"b"
		if old, err := netlink.LinkByName(x); err == nil {
			_ = netlink.LinkDel(old) // left by a killed earlier process with our PID
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: x, MTU: mtu}, PeerName: y}
		if err := netlink.LinkAdd(veth); err != nil {
			tb.Skipf("SKIP: cannot create veth %s: %v", x, err)
		}
		tb.Cleanup(func() { _ = netlink.LinkDel(veth) })
		for _, name := range []string{x, y} {
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0o644)
			l, err := netlink.LinkByName(name)
			if err != nil {
				tb.Fatal(err)
			}
			if mtu > 0 {
				if err := netlink.LinkSetMTU(l, mtu); err != nil {
					tb.Fatal(err)
				}
			}
			if err := netlink.LinkSetUp(l); err != nil {
				tb.Fatal(err)
			}
		}
		a, b = append(a, x), append(b, y)
	}
	// A veth drops what is sent before its carrier is up, and LinkSetUp returns before that.
	for _, name := range append(append([]string(nil), a...), b...) {
		waitOperUp(tb, name)
	}
	return a, b
}

// Pair is Pairs for one pair.
func Pair(tb testing.TB, tag string, mtu int) (a, b string) {
	tb.Helper()
	as, bs := Pairs(tb, tag, 1, mtu)
	return as[0], bs[0]
}

func waitOperUp(tb testing.TB, name string) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l, err := netlink.LinkByName(name); err == nil && l.Attrs().OperState == netlink.OperUp {
			return
		}
	}
	tb.Fatalf("veth %s did not come up", name)
}
