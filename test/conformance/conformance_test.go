package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// TestVectorsWellFormed loads every vector file, which checks it (Vector.Check): name = file name,
// packets build, every name exists.
func TestVectorsWellFormed(t *testing.T) {
	vs, err := LoadDir(Dir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d vectors", len(vs))
}

// A vector whose name is not its file name is refused when loaded.
func TestLoadChecksTheName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "right.json")
	text := `{"name": "wrong", "description": "d", "steps": [{}]}`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "not the file name") {
		t.Errorf("Load: %v, want a name error", err)
	}
}

func TestCheckRejectsUnknownNames(t *testing.T) {
	cases := map[string]Vector{
		"event": {Name: "x", Description: "d", Steps: []Step{{Counters: Deltas{Global: map[string]uint64{"claimd": 1}}}}},
		"flag":  {Name: "x", Description: "d", Steps: []Step{{In: PortPacket{Packet: Packet{INA: &INASpec{Flags: []byte(`["resnd"]`)}}}}}},
		"role":  {Name: "x", Description: "d", Setup: Setup{Jobs: []JobSpec{{Role: "boss"}}}, Steps: []Step{{}}},
		"job":   {Name: "x", Description: "d", Steps: []Step{{Counters: Deltas{Jobs: map[string]map[string]uint64{"one": {}}}}}},
	}
	for name, v := range cases {
		if err := v.Check(); err == nil {
			t.Errorf("%s: Check accepted a bad name", name)
		}
	}
}

func TestBuildDefaultsMatchWire(t *testing.T) {
	var p Packet
	b, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := f.Unmarshal(b); err != nil {
		t.Fatalf("default packet does not decode: %v", err)
	}
	want := wire.Frame{TTL: 64, ID: 1, SrcPort: wire.UDPPort}
	want.INA = wire.Header{Version: 1, Type: wire.TypeData, Job: 1}
	want.SrcMAC, want.DstMAC = f.SrcMAC, f.DstMAC
	want.SrcIP, want.DstIP = f.SrcIP, f.DstIP
	if string(want.Marshal()) != string(b) {
		t.Errorf("default packet differs from the wire codec's:\n%s", Diff(want.Marshal(), b))
	}
	if f.DstMAC.String() != "00:00:00:00:00:fe" || f.SrcIP.String() != "10.0.0.1" || f.DstIP.String() != "10.0.0.100" {
		t.Errorf("defaults: %v %v %v", f.DstMAC, f.SrcIP, f.DstIP)
	}
}

func TestDiffNamesTheField(t *testing.T) {
	a := (&wire.Frame{TTL: 64, INA: wire.Header{Version: 1, Type: wire.TypeData, Job: 1}}).Marshal()
	b := (&wire.Frame{TTL: 64, INA: wire.Header{Version: 1, Type: wire.TypeData, Job: 1, Flags: wire.FlagCollision}}).Marshal()
	d := Diff(a, b)
	if !strings.Contains(d, "ina.flags: want none, got collision") {
		t.Errorf("diff does not name the flag field:\n%s", d)
	}
	if Diff(a, a) != "" {
		t.Error("equal frames differ")
	}
	if d := Diff(a, a[:100]); !strings.Contains(d, "len: want 314, got 100") {
		t.Errorf("diff of a truncated frame:\n%s", d)
	}
}
