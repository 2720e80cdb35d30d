package controlplane

import (
	"strings"
	"testing"

	"github.com/inapack/inapack/p4src"
	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
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
