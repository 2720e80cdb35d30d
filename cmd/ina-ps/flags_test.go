package main

import (
	"slices"
	"testing"
)

// TestIfaceList: -iface takes repeats and comma-separated lists alike (the operator's
// INAPACK_IFACE names a PS's interfaces in one variable); an empty name is refused.
func TestIfaceList(t *testing.T) {
	var f ifaceFlags
	for _, s := range []string{"eth0,inal3p", "eth1"} {
		if err := f.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"eth0", "inal3p", "eth1"}; !slices.Equal(f, want) {
		t.Errorf("-iface gave %q, want %q", f, want)
	}
	for _, bad := range []string{"", "eth0,", ",eth0"} {
		if err := (&ifaceFlags{}).Set(bad); err == nil {
			t.Errorf("-iface %q accepted", bad)
		}
	}
}
