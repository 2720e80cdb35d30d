package controlplane

import (
	"maps"
	"slices"
	"testing"

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
	// settings + 1 route + ina_ps + 2 workers + 1 result + 1 multicast group
	if len(d) != 7 {
		t.Fatalf("%d entities, want 7: %v", len(d), slices.Sorted(maps.Keys(d)))
	}
}

func TestDiffEmptySwitchInsertsAll(t *testing.T) {
	_, d := desiredOf(t, goodConfig)
	diff := ComputeDiff(d, nil)
	if len(diff.Insert) != 6 || len(diff.Modify) != 1 || len(diff.Delete) != 0 {
		t.Fatalf("diff %v, want 6 inserts and the settings default modified", diff)
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
	if n != 5 { // ina_ps, 2 workers, result, group
		t.Fatalf("job filter matched %d entities, want 5", n)
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
