package p4src

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// TestCompiledP4InfoMatchesCommitted compiles the v1model program where p4c is installed and
// checks that the P4Info it generates is the committed (embedded) one.
func TestCompiledP4InfoMatchesCommitted(t *testing.T) {
	p4c, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		t.Skip("SKIP: p4c-bm2-ss not on PATH")
	}
	dir := t.TempDir()
	p4info := filepath.Join(dir, "ina.p4info.txtpb")
	cmd := exec.Command(p4c, "--p4v", "16", "--p4runtime-files", p4info,
		"-o", filepath.Join(dir, "ina.json"), filepath.Join("v1model", "ina.p4"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	text, err := os.ReadFile(p4info)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseP4Info(text)
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadP4Info()
	if err != nil {
		t.Fatal(err)
	}
	canonical(got)
	canonical(want)
	if !proto.Equal(got, want) {
		t.Errorf("p4c's P4Info differs from p4src/ina.p4info.txtpb; regenerate it with `make p4` and "+
			"copy build/ina.p4info.txtpb over it.\np4c:\n%v\ncommitted:\n%v", got, want)
	}
}

// canonical sorts the entity lists by id, so that declaration order does not matter.
func canonical(info *p4configv1.P4Info) {
	sort.Slice(info.Tables, func(i, j int) bool { return info.Tables[i].Preamble.Id < info.Tables[j].Preamble.Id })
	sort.Slice(info.Actions, func(i, j int) bool { return info.Actions[i].Preamble.Id < info.Actions[j].Preamble.Id })
	sort.Slice(info.Counters, func(i, j int) bool { return info.Counters[i].Preamble.Id < info.Counters[j].Preamble.Id })
	sort.Slice(info.Registers, func(i, j int) bool { return info.Registers[i].Preamble.Id < info.Registers[j].Preamble.Id })
}
