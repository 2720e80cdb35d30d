package devconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadBfP4cRealOutput builds both device-config forms from what bf-p4c really writes (its -o
// directory, found through manifest.json), where bf-p4c is installed: the files and layout are
// the same for any program, so a small one (testdata/smoke.p4, a few seconds) stands in.
func TestLoadBfP4cRealOutput(t *testing.T) {
	bfp4c, err := exec.LookPath("bf-p4c")
	if err != nil {
		t.Skip("SKIP: bf-p4c not on PATH (the Tofino compiler; ../shared/toolchains/install-bf-p4c.sh)")
	}
	dir := t.TempDir()
	src, _ := filepath.Abs(filepath.Join("testdata", "smoke.p4"))
	cmd := exec.Command(bfp4c, "--std", "p4-16", "--arch", "tna", "--target", "tofino", "-o", dir,
		"--bf-rt-schema", filepath.Join(dir, "bf-rt.json"), "--p4runtime-files", filepath.Join(dir, "smoke.p4info.txtpb"), src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	tf, err := LoadBfP4c(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "pipe", "tofino.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if tf.PipelineName != "smoke" || tf.Profile != "pipe" || !bytes.Equal(tf.Binary, bin) || len(tf.BfrtJSON) == 0 {
		t.Fatalf("loaded %q/%q, %d-byte binary (file %d), %d-byte bf-rt.json", tf.PipelineName, tf.Profile,
			len(tf.Binary), len(bin), len(tf.BfrtJSON))
	}
	var ctx struct {
		Tables []json.RawMessage `json:"tables"`
	}
	if err := json.Unmarshal(tf.ContextJSON, &ctx); err != nil || len(ctx.Tables) == 0 {
		t.Fatalf("context.json: %v, %d tables", err, len(ctx.Tables))
	}
	st, err := tf.Stratum()
	if err != nil {
		t.Fatal(err)
	}
	top := fields(t, st)
	prof := fields(t, top[3][0])
	if string(top[1][0]) != "smoke" || !bytes.Equal(prof[3][0], bin) || string(prof[1][0]) != "pipe" {
		t.Error("Stratum form does not carry the program, profile and binary")
	}
	pi, err := tf.PI()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParsePI(pi)
	if err != nil || back.PipelineName != "smoke" || !bytes.Equal(back.Binary, bin) {
		t.Errorf("PI form round trip: %v", err)
	}
}

// The layout errors say what is missing, without bf-p4c.
func TestLoadBfP4cErrors(t *testing.T) {
	write := func(dir, name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const good = `{"target": "tofino", "compilation_succeeded": true, "programs": [{"program_name": "ina.p4",
		"pipes": [{"pipe_id": 0, "pipe_name": "pipe", "files": {"context": {"path": "pipe/context.json"}}}]}]}`
	dir := t.TempDir()
	if _, err := LoadBfP4c(dir); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("no manifest: %v", err)
	}
	write(dir, "manifest.json", strings.Replace(good, `"compilation_succeeded": true`, `"compilation_succeeded": false`, 1))
	if _, err := LoadBfP4c(dir); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("failed compilation: %v", err)
	}
	write(dir, "manifest.json", good)
	write(dir, "pipe/context.json", `{"tables": []}`)
	if _, err := LoadBfP4c(dir); err == nil || !strings.Contains(err.Error(), "tofino.bin") {
		t.Errorf("no binary: %v", err)
	}
	write(dir, "pipe/tofino.bin", "\x01\x02")
	tf, err := LoadBfP4c(dir)
	if err != nil || tf.BfrtJSON != nil {
		t.Fatalf("without a schema: %v", err)
	}
	if _, err := tf.Stratum(); err == nil {
		t.Error("Stratum form built without bf-rt.json")
	}
	write(dir, "bf-rt.json", `{"tables": []}`)
	if tf, err := LoadBfP4c(dir); err != nil || tf.PipelineName != "ina" || string(tf.Binary) != "\x01\x02" {
		t.Errorf("complete layout: %+v %v", tf, err)
	}
}
