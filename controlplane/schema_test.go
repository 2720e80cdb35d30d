package controlplane

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/p4src/wire"
	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func testSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := SchemaFromText(p4src.P4Info)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaShortNames(t *testing.T) {
	s := testSchema(t)
	for _, n := range []string{TableIPv4LPM, TableJob, TablePS, TableSettings} {
		if s.Table(n) == nil {
			t.Errorf("table %s not found by short name", n)
		}
	}
	if s.Register(RegisterSlotJob) == nil {
		t.Error("register slot_job not found")
	}
}

func TestSchemaMismatchNamesWhatIsMissing(t *testing.T) {
	info := proto.Clone(testSchema(t).Info).(*p4config.P4Info)
	// Drop the ingress_port key of ina_job and the whole ina_ps table.
	var tables []*p4config.Table
	for _, tb := range info.Tables {
		switch ShortName(tb.Preamble.Name) {
		case TablePS:
			continue
		case TableJob:
			tb.MatchFields = tb.MatchFields[:1]
		}
		tables = append(tables, tb)
	}
	info.Tables = tables
	_, err := NewSchema(info)
	if err == nil {
		t.Fatal("mismatched P4Info accepted")
	}
	for _, want := range []string{`table "ina_job" has no match field "ingress_port"`, `no table "ina_ps"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestParseP4InfoUnknownFields(t *testing.T) {
	text := []byte(strings.Replace(string(p4src.P4Info), "tables {", "tables {\n  has_initial_entries_from_the_future: true", 1))
	if _, err := SchemaFromText(text); err != nil {
		t.Fatalf("unknown fields must be discarded: %v", err)
	}
}

// The TNA build has no slot_job: slot_tag says who holds a slot (job in bits 15..0, 0 while free)
// and slot_count keeps its value after a release, so a free slot must read as count 0.
func TestReadSlotsTNALayout(t *testing.T) {
	info := proto.Clone(testSchema(t).Info).(*p4config.P4Info)
	for _, r := range info.Registers {
		if ShortName(r.Preamble.Name) == RegisterSlotJob {
			r.Preamble.Name = "Ingress." + RegisterSlotTag
		}
	}
	s, err := NewSchema(info)
	if err != nil {
		t.Fatal(err)
	}
	if s.SlotOwner() != RegisterSlotTag {
		t.Fatalf("slot owner %q", s.SlotOwner())
	}
	regs := map[string][]uint64{
		RegisterSlotTag:   {0, 0x05110007, 0x00110002, 0},
		RegisterSlotCount: {3, 2, 1, 0},
	}
	jobs, counts, err := readSlots(t.Context(), s, func(_ context.Context, n string) ([]uint64, error) {
		return slices.Clone(regs[n]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(jobs, []uint64{0, 7, 2, 0}) || !slices.Equal(counts, []uint64{0, 2, 1, 0}) {
		t.Errorf("jobs %v counts %v", jobs, counts)
	}
	if got := SlotsOf(jobs, counts, 7); !slices.Equal(got, []int{1}) {
		t.Errorf("SlotsOf(7) = %v", got)
	}
}

// bf-p4c's TNA P4Info has its counters as barefoot.Counter externs (size in field 2 of the Any),
// and is read in binary: the schema indexes them, and the per-job stride follows the size.
func TestSchemaTNAExterns(t *testing.T) {
	info := proto.Clone(testSchema(t).Info).(*p4config.P4Info)
	if st := testSchema(t).JobEventStride(); st != int64(wire.NumEvents) {
		t.Errorf("v1model stride %d", st)
	}
	var kept []*p4config.Counter
	ext := &p4config.Extern{ExternTypeId: 131, ExternTypeName: "Counter"}
	for _, c := range info.Counters {
		if ShortName(c.Preamble.Name) != CounterJobEvents {
			kept = append(kept, c)
			continue
		}
		val := protowire.AppendTag(nil, 2, protowire.VarintType)
		val = protowire.AppendVarint(val, 32768)
		ext.Instances = append(ext.Instances, &p4config.ExternInstance{Preamble: c.Preamble,
			Info: &anypb.Any{TypeUrl: "type.googleapis.com/barefoot.Counter", Value: val}})
	}
	info.Counters, info.Externs = kept, []*p4config.Extern{ext}
	b, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	s, err := SchemaFromText(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Counter(CounterJobEvents); c == nil || c.GetSize() != 32768 || s.JobEventStride() != 32 {
		t.Errorf("extern counter %v, stride %d", c, s.JobEventStride())
	}
	if _, err := ParseP4Info([]byte("tables { bogus")); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("bad text: %v", err)
	}
}
