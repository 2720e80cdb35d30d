package refswitch

import (
	"strings"
	"testing"
)

func TestParsePort(t *testing.T) {
	p, err := ParsePort("511@veth1")
	if err != nil || p.Port != 511 || p.Ifname != "veth1" {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"512@veth1", "-1@veth1", "x@veth1", "3", "3@"} {
		if _, err := ParsePort(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if p, r, err := ParseRate("2@100.5"); err != nil || p != 2 || r != 100.5 {
		t.Fatalf("rate: %v %v %v", p, r, err)
	}
	for _, bad := range []string{"2@0", "2@-1", "600@10", "2@x", "2"} {
		if _, _, err := ParseRate(bad); err == nil {
			t.Errorf("rate %q parsed", bad)
		}
	}
}

func TestConfigChecks(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Ports: []PortSpec{{1, "a"}, {1, "b"}}}, "port 1 given twice"},
		{Config{Ports: []PortSpec{{1, "a"}, {2, "a"}}}, "interface a given twice"},
		{Config{Ports: []PortSpec{{600, "a"}}}, "outside 0..511"},
		{Config{Ports: []PortSpec{{1, "a"}}, Rates: map[uint16]float64{2: 10}}, "port 2, which has no interface"},
		{Config{GRPCAddr: "0.0.0.0:9559"}, "not loopback"},
		{Config{GRPCAddr: ":9559"}, "not loopback"},
		{Config{TLSCert: "c"}, "both a certificate and a key"},
		{Config{StatsAddr: "0.0.0.0:1"}, "must be a loopback"},
		{Config{Faults: FaultConfig{Loss: 1.5}}, "--loss"},
	}
	for _, tc := range cases {
		if _, err := tc.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, ok := range []Config{{GRPCAddr: "0.0.0.0:9559", Insecure: true}, {GRPCAddr: "[::1]:9559"}, {GRPCAddr: "localhost:1"}} {
		if _, err := ok.withDefaults(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestBytes(t *testing.T) {
	if b := encodeUint(0); string(b) != "\x00" {
		t.Fatalf("0 encodes as %q", b)
	}
	if b := encodeUint(0x1ff); string(b) != "\x01\xff" {
		t.Fatalf("0x1ff encodes as %q", b)
	}
	if v, err := decodeUint([]byte{0, 0, 1, 0xff}, 9); err != nil || v != 0x1ff {
		t.Fatalf("leading zeros: %v %v", v, err)
	}
	if _, err := decodeUint([]byte{2, 0}, 9); err == nil {
		t.Fatal("512 fit in 9 bits")
	}
	if _, err := decodeUint(nil, 9); err == nil {
		t.Fatal("empty string decoded")
	}
	for _, v := range []int32{0, 1, -1, 127, 128, -128, -129, 1 << 30, -1 << 31, 1<<31 - 1} {
		got, err := decodeInt32(encodeInt32(v))
		if err != nil || got != v {
			t.Errorf("int32 %d round-trips to %d (%v)", v, got, err)
		}
	}
	if b := encodeInt32(-1); string(b) != "\xff" {
		t.Fatalf("-1 encodes as %q", b)
	}
	if b := encodeInt32(128); string(b) != "\x00\x80" {
		t.Fatalf("128 encodes as %q", b)
	}
	if v, err := decodeInt32([]byte{0xff, 0xff, 0xff, 0xff, 0xfe}); err != nil || v != -2 {
		t.Fatalf("sign-extended -2: %v %v", v, err)
	}
	if _, err := decodeInt32([]byte{1, 0, 0, 0, 0}); err == nil {
		t.Fatal("2^32 fit in int<32>")
	}
}
