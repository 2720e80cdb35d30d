package p4src

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/inapack/inapack/p4src/wire"
)

// lastComponent is how the controller finds entities: p4c prefixes control instance names, which
// differ between the v1model and TNA builds.
func lastComponent(name string) string { return name[strings.LastIndex(name, ".")+1:] }

func mustLoad(t *testing.T) *p4configv1.P4Info {
	t.Helper()
	info, err := LoadP4Info()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// docActions reads the action signatures of docs/protocol.md's table section, e.g.
// `ina_set_ps(bit<9> port, bit<48> mac, bit<32> ip)`.
func docActions(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, "## Switch tables"), strings.Index(text, "Multicast:")
	if start < 0 || end < start {
		t.Fatal("docs/protocol.md: table section not found")
	}
	acts := map[string][]string{}
	for _, m := range regexp.MustCompile("`(\\w+)\\(([^)`]*)\\)`").FindAllStringSubmatch(text[start:end], -1) {
		if _, seen := acts[m[1]]; seen {
			continue // a later call, e.g. the initial default ina_set_settings(1, 0, ...)
		}
		var params []string
		for _, p := range strings.Split(m[2], ",") {
			if p = strings.TrimSpace(p); p != "" {
				params = append(params, p)
			}
		}
		acts[m[1]] = params
	}
	return acts
}

func TestP4InfoHasProtocolActions(t *testing.T) {
	info := mustLoad(t)
	got := map[string]*p4configv1.Action{}
	for _, a := range info.Actions {
		got[lastComponent(a.Preamble.Name)] = a
	}
	want := docActions(t)
	if len(want) < 6 {
		t.Fatalf("found only %d action signatures in docs/protocol.md: %v", len(want), want)
	}
	want["drop"] = nil
	want["NoAction"] = nil
	for name, params := range want {
		a, ok := got[name]
		if !ok {
			t.Errorf("action %s missing from P4Info", name)
			continue
		}
		if len(a.Params) != len(params) {
			t.Errorf("action %s: %d params in P4Info, %d in docs/protocol.md", name, len(a.Params), len(params))
			continue
		}
		for i, p := range a.Params {
			if w := fmt.Sprintf("bit<%d> %s", p.Bitwidth, p.Name); w != params[i] {
				t.Errorf("action %s param %d: P4Info %q, docs/protocol.md %q", name, i+1, w, params[i])
			}
			if p.Id != uint32(i+1) {
				t.Errorf("action %s param %s: id %d, want %d", name, p.Name, p.Id, i+1)
			}
		}
	}
}

func TestP4InfoTables(t *testing.T) {
	type key struct {
		name  string
		width int32
		match p4configv1.MatchField_MatchType
	}
	want := map[string]struct {
		keys    []key
		actions []string
	}{
		"ipv4_lpm":     {[]key{{"hdr.ipv4.dst_addr", 32, p4configv1.MatchField_LPM}}, []string{"ipv4_forward", "drop"}},
		"ina_job":      {[]key{{"hdr.ina.job_id", 16, p4configv1.MatchField_EXACT}, {"standard_metadata.ingress_port", 9, p4configv1.MatchField_EXACT}, {"member", 4, p4configv1.MatchField_EXACT}}, []string{"ina_worker", "ina_result", "ina_transit", "NoAction"}},
		"ina_ps":       {[]key{{"hdr.ina.job_id", 16, p4configv1.MatchField_EXACT}}, []string{"ina_set_ps", "NoAction"}},
		"ina_settings": {nil, []string{"ina_set_settings"}},
		"ina_unicast":  {[]key{{"hdr.ina.job_id", 16, p4configv1.MatchField_EXACT}, {"hdr.ina.bitmap", 32, p4configv1.MatchField_EXACT}}, []string{"ina_unicast_port", "NoAction"}},
	}
	info := mustLoad(t)
	actionName := map[uint32]string{}
	for _, a := range info.Actions {
		actionName[a.Preamble.Id] = lastComponent(a.Preamble.Name)
	}
	seen := map[string]bool{}
	for _, tb := range info.Tables {
		name := lastComponent(tb.Preamble.Name)
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected table %s", tb.Preamble.Name)
			continue
		}
		seen[name] = true
		if len(tb.MatchFields) != len(w.keys) {
			t.Errorf("table %s: %d keys, want %d", name, len(tb.MatchFields), len(w.keys))
		} else {
			for i, mf := range tb.MatchFields {
				k := w.keys[i]
				if mf.Name != k.name || mf.Bitwidth != k.width || mf.GetMatchType() != k.match {
					t.Errorf("table %s key %d: %s bit<%d> %v, want %s bit<%d> %v", name, i+1,
						mf.Name, mf.Bitwidth, mf.GetMatchType(), k.name, k.width, k.match)
				}
			}
		}
		var acts []string
		for _, r := range tb.ActionRefs {
			acts = append(acts, actionName[r.Id])
		}
		if strings.Join(acts, ",") != strings.Join(w.actions, ",") {
			t.Errorf("table %s: actions %v, want %v", name, acts, w.actions)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("table %s missing from P4Info", name)
		}
	}
}

func TestP4InfoCountersAndRegisters(t *testing.T) {
	info := mustLoad(t)
	counters := map[string]*p4configv1.Counter{}
	for _, c := range info.Counters {
		counters[lastComponent(c.Preamble.Name)] = c
	}
	for name, size := range map[string]int64{
		"ina_events":     int64(wire.NumEvents),
		"ina_job_events": int64(wire.MaxJobs) * int64(wire.NumEvents),
	} {
		c, ok := counters[name]
		switch {
		case !ok:
			t.Errorf("counter %s missing", name)
		case c.Size != size:
			t.Errorf("counter %s: size %d, want %d", name, c.Size, size)
		case c.Spec.GetUnit() != p4configv1.CounterSpec_BOTH:
			t.Errorf("counter %s: unit %v, want BOTH (packets and bytes)", name, c.Spec.GetUnit())
		}
	}

	want := docRegisters(t)
	regs := map[string]*p4configv1.Register{}
	for _, r := range info.Registers {
		regs[lastComponent(r.Preamble.Name)] = r
	}
	if len(regs) != len(want) {
		t.Errorf("%d registers in P4Info, %d in docs/protocol.md", len(regs), len(want))
	}
	for name, typ := range want {
		r, ok := regs[name]
		if !ok {
			t.Errorf("register %s missing", name)
			continue
		}
		var got string
		bs := r.TypeSpec.GetBitstring()
		switch {
		case bs.GetBit() != nil:
			got = fmt.Sprintf("bit<%d>", bs.GetBit().Bitwidth)
		case bs.GetInt() != nil:
			got = fmt.Sprintf("int<%d>", bs.GetInt().Bitwidth)
		}
		if got != typ {
			t.Errorf("register %s: %s, want %s", name, got, typ)
		}
		if r.Size != wire.NumSlots {
			t.Errorf("register %s: size %d, want %d", name, r.Size, wire.NumSlots)
		}
	}
}

// docRegisters reads "`slot_job` (bit<16>)" style register declarations from docs/protocol.md,
// expanding `slot_value_0` .. `slot_value_63`.
func docRegisters(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	regs := map[string]string{}
	for _, m := range regexp.MustCompile("`(slot_[a-z]+)` \\(((?:bit|int)<\\d+>)").FindAllStringSubmatch(string(doc), -1) {
		regs[m[1]] = m[2]
	}
	m := regexp.MustCompile("`slot_value_0` \\.\\. `slot_value_(\\d+)` \\(((?:bit|int)<\\d+>)\\)").FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatal("docs/protocol.md: slot_value_0 .. slot_value_N not found")
	}
	last, _ := strconv.Atoi(m[1])
	if last != wire.NumValues-1 {
		t.Errorf("docs/protocol.md names slot_value_0..%d, want ..%d", last, wire.NumValues-1)
	}
	for i := 0; i <= last; i++ {
		regs["slot_value_"+strconv.Itoa(i)] = m[2]
	}
	if len(regs) < 7 {
		t.Fatalf("found only %d registers in docs/protocol.md", len(regs))
	}
	return regs
}

// TestP4InfoIDs checks p4c's id scheme: a resource-type byte over 24 bits of the Jenkins
// one-at-a-time hash of the fully qualified name, unique across the file.
func TestP4InfoIDs(t *testing.T) {
	info := mustLoad(t)
	seen := map[uint32]string{}
	check := func(kind byte, p *p4configv1.Preamble) {
		if byte(p.Id>>24) != kind {
			t.Errorf("%s: id %#x has type byte %#x, want %#x", p.Name, p.Id, p.Id>>24, kind)
		}
		if p.Id&0xffffff != jenkinsHash(p.Name)&0xffffff {
			// p4c probes linearly on a collision; anything else means a hand edit went wrong.
			t.Logf("%s: id %#x is not the hash of its name (collision probe?)", p.Name, p.Id)
		}
		if other, dup := seen[p.Id]; dup {
			t.Errorf("id %#x used by %s and %s", p.Id, other, p.Name)
		}
		seen[p.Id] = p.Name
		if p.Alias != "" && !strings.HasSuffix(p.Name, p.Alias) {
			t.Errorf("%s: alias %q is not a suffix of the name", p.Name, p.Alias)
		}
	}
	for _, x := range info.Tables {
		check(0x02, x.Preamble)
	}
	for _, x := range info.Actions {
		check(0x01, x.Preamble)
	}
	for _, x := range info.Counters {
		check(0x12, x.Preamble)
	}
	for _, x := range info.Registers {
		check(0x16, x.Preamble)
	}
	if info.PkgInfo.GetArch() != "v1model" {
		t.Errorf("arch %q, want v1model", info.PkgInfo.GetArch())
	}
}

// jenkinsHash is p4c's jenkinsOneAtATimeHash (control-plane/p4RuntimeSymbolTable.cpp).
func jenkinsHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}
