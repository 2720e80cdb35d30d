package vethtest

import (
	"testing"

	"github.com/vishvananda/netlink"
)

func TestPairs(t *testing.T) {
	var a, b []string
	t.Run("make", func(t *testing.T) {
		a, b = Pairs(t, "vt", 2, 9000)
		for _, name := range append(a, b...) {
			l, err := netlink.LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			if l.Attrs().MTU != 9000 || l.Attrs().OperState != netlink.OperUp {
				t.Errorf("%s: mtu %d, state %v", name, l.Attrs().MTU, l.Attrs().OperState)
			}
		}
		if len(a) != 2 || a[0] == a[1] {
			t.Errorf("names %v %v", a, b)
		}
	})
	for _, name := range append(a, b...) {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("%s still there after its test ended", name)
		}
	}
}
