package controlplane

import (
	"maps"
	"math/big"
	"math/bits"
	"slices"
	"strings"
	"testing"

	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

func desiredOf(t *testing.T, text string) (*Schema, Desired) {
	t.Helper()
	cfg, err := ParseConfig([]byte(text), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := testSchema(t)
	d, err := s.DesiredState(cfg, "s1")
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

func values(d Desired) []*p4v1.Entity {
	var out []*p4v1.Entity
	for _, k := range slices.Sorted(maps.Keys(d)) {
		out = append(out, d[k])
	}
	return out
}

// pad returns a copy of e with every match and parameter value left-padded to 8 bytes, as a switch
// that does not use canonical bytestrings would return it.
func pad(e *p4v1.Entity) *p4v1.Entity {
	e = proto.Clone(e).(*p4v1.Entity)
	p := func(b []byte) []byte { return append(make([]byte, 8-len(b)), b...) }
	if te := e.GetTableEntry(); te != nil {
		for _, m := range te.Match {
			if x := m.GetExact(); x != nil {
				x.Value = p(x.Value)
			}
		}
		for _, pr := range te.GetAction().GetAction().GetParams() {
			pr.Value = p(pr.Value)
		}
	}
	return e
}

func TestDesiredState(t *testing.T) {
	_, d := desiredOf(t, goodConfig)
	// settings + 1 route + ina_ps + 2 workers + 1 result + 1 multicast group + 2 ina_unicast
	if len(d) != 9 {
		t.Fatalf("%d entities, want 9: %v", len(d), slices.Sorted(maps.Keys(d)))
	}
}

// unicastPorts are the ina_unicast entries of job on switch sw: worker bit -> port.
func unicastPorts(t *testing.T, s *Schema, cfg *Config, sw string, job int) map[int]int {
	t.Helper()
	d, err := s.DesiredState(cfg, sw)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, e := range d {
		te := e.GetTableEntry()
		if te == nil || ShortName(s.TableName(te.GetTableId())) != TableUnicast {
			continue
		}
		var j, bitmap uint64
		for _, m := range te.GetMatch() {
			v := new(big.Int).SetBytes(m.GetExact().GetValue()).Uint64()
			if m.GetFieldId() == s.field(s.Table(TableUnicast), "job_id").GetId() {
				j = v
			} else {
				bitmap = v
			}
		}
		if int(j) != job || bits.OnesCount64(bitmap) != 1 {
			t.Fatalf("ina_unicast entry job %d bitmap %#x", j, bitmap)
		}
		out[bits.TrailingZeros64(bitmap)] = int(new(big.Int).SetBytes(te.GetAction().GetAction().GetParams()[0].GetValue()).Int64())
	}
	return out
}

// Every switch of a job's result path gets an ina_unicast entry per worker toward it: a member's
// own port (two members behind one port share it), result.unicast's branch for workers behind
// other switches; a program without the table gets none.
func TestUnicastEntities(t *testing.T) {
	text := strings.Replace(goodConfig, "- {port: 2, worker_bit: 1}", "- {port: 1, member: 1, worker_bit: 1}\n          - {port: 2, worker_bit: 2}", 1)
	text += `      - switch: s2
        ps: {port: 9, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        members: [{port: 4, worker_bit: 3}]
        result: {port: 9, multicast_group: 5, ports: [4, 6], unicast: [{worker_bit: 0, port: 6}, {worker_bit: 2, port: 6}]}
`
	text = strings.Replace(text, "    target: ref\n", "    target: ref\n  - name: s2\n    address: 127.0.0.1:2\n    target: ref\n", 1)
	cfg, err := ParseConfig([]byte(text), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := testSchema(t)
	if got, want := unicastPorts(t, s, cfg, "s1", 5), map[int]int{0: 1, 1: 1, 2: 2}; !maps.Equal(got, want) {
		t.Errorf("s1: ina_unicast %v, want %v", got, want)
	}
	if got, want := unicastPorts(t, s, cfg, "s2", 5), map[int]int{0: 6, 2: 6, 3: 4}; !maps.Equal(got, want) {
		t.Errorf("s2: ina_unicast %v, want %v", got, want)
	}
	// Without a result entry on the switch (off the result path) there are none.
	cfg.Jobs[0].Switches[1].Result = nil
	cfg.Jobs[0].Switches[1].TransitPorts = []int{9}
	if got := unicastPorts(t, s, cfg, "s2", 5); len(got) != 0 {
		t.Errorf("s2 without a result entry: ina_unicast %v", got)
	}
	// A program without ina_unicast: no entries, and the schema still loads.
	info := proto.Clone(s.Info).(*p4config.P4Info)
	info.Tables = slices.DeleteFunc(info.Tables, func(tb *p4config.Table) bool { return ShortName(tb.GetPreamble().GetName()) == TableUnicast })
	old, err := NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	if got := unicastPorts(t, old, cfg, "s1", 5); len(got) != 0 {
		t.Errorf("a program without ina_unicast got entries %v", got)
	}
}

func TestDiffEmptySwitchInsertsAll(t *testing.T) {
	_, d := desiredOf(t, goodConfig)
	diff := ComputeDiff(d, nil)
	if len(diff.Insert) != 8 || len(diff.Modify) != 1 || len(diff.Delete) != 0 {
		t.Fatalf("diff %v, want 8 inserts and the settings default modified", diff)
	}
	ups := diff.Updates()
	if ups[0].Type != p4v1.Update_MODIFY || !ups[0].Entity.GetTableEntry().GetIsDefaultAction() {
		t.Fatalf("first update %v, want the settings MODIFY before inserts", ups[0])
	}
}

func TestDiffIdempotentAcrossEncodings(t *testing.T) {
	_, d := desiredOf(t, goodConfig)
	var actual []*p4v1.Entity
	for _, e := range values(d) {
		actual = append(actual, pad(e))
	}
	if diff := ComputeDiff(d, actual); !diff.Empty() {
		t.Fatalf("state read back padded should match, got %v: %v", diff, diff.Modify)
	}
}

func TestDiffModifyAndDelete(t *testing.T) {
	s, d := desiredOf(t, goodConfig)
	actual := values(d)
	// The switch has an extra job entry and a worker entry with another fan-in.
	_, other := desiredOf(t, goodConfig[:len(goodConfig)-1]+"\n        transit_ports: [9]\n")
	var extra *p4v1.Entity
	for k, e := range other {
		if _, ok := d[k]; !ok {
			extra = e
		}
	}
	if extra == nil {
		t.Fatal("no extra entity")
	}
	actual = append(actual, extra)
	for i, e := range actual {
		if a := e.GetTableEntry().GetAction().GetAction(); a != nil && a.ActionId == s.Action(ActionWorker).Preamble.Id {
			e = proto.Clone(e).(*p4v1.Entity)
			e.GetTableEntry().GetAction().GetAction().Params[1].Value = []byte{9}
			actual[i] = e
			break
		}
	}
	diff := ComputeDiff(d, actual)
	if len(diff.Insert) != 0 || len(diff.Modify) != 1 || len(diff.Delete) != 1 {
		t.Fatalf("diff %v, want 1 modify and 1 delete", diff)
	}
	if EntityKey(diff.Delete[0]) != EntityKey(extra) {
		t.Fatalf("deleted %s, want %s", EntityKey(diff.Delete[0]), EntityKey(extra))
	}
	ups := diff.Updates()
	if ups[0].Type != p4v1.Update_DELETE {
		t.Fatalf("deletes must come first, got %v", ups[0].Type)
	}
}

func TestMulticastOrderDoesNotMatter(t *testing.T) {
	a := MulticastEntity(3, []int{2, 1})
	b := MulticastEntity(3, []int{1, 2})
	if diff := ComputeDiff(Desired{EntityKey(a): a}, []*p4v1.Entity{b}); !diff.Empty() {
		t.Fatalf("replica order changed the diff: %v", diff)
	}
	c := MulticastEntity(3, []int{1})
	if diff := ComputeDiff(Desired{EntityKey(a): a}, []*p4v1.Entity{c}); len(diff.Modify) != 1 {
		t.Fatalf("replica change not a modify: %v", diff)
	}
}

func TestJobFilter(t *testing.T) {
	s, d := desiredOf(t, goodConfig)
	f := s.jobFilter(5, map[uint32]bool{5: true})
	n := 0
	for _, e := range d {
		if f(pad(e)) {
			n++
		}
	}
	if n != 7 { // ina_ps, 2 workers, result, group, 2 ina_unicast
		t.Fatalf("job filter matched %d entities, want 7", n)
	}
	if g := s.jobFilter(6, nil); g(d[EntityKey(MulticastEntity(5, []int{1, 2}))]) {
		t.Fatal("job 6 filter matched job 5's group")
	}
}

func TestParseRegisterRead(t *testing.T) {
	out := "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n" +
		"RuntimeCmd: Ingress.agg.slot_job= 0, 5, 5, 0\nRuntimeCmd: \n"
	v, err := parseRegisterRead(out, "Ingress.agg.slot_job")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 4 || v[1] != 5 || v[3] != 0 {
		t.Fatalf("got %v", v)
	}
	if got := SlotsOf(v, []uint64{0, 1, 0, 0}, 5); len(got) != 1 || got[0] != 1 {
		t.Fatalf("SlotsOf = %v, want [1] (slot 2 is free)", got)
	}
	for _, bad := range []string{"", "RuntimeCmd: Ingress.agg.slot_job= 0, x\n"} {
		if _, err := parseRegisterRead(bad, "Ingress.agg.slot_job"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
