package devconfig_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/devconfig"
)

// TestTNAProgramCompiles compiles p4src/tna/ina.p4 for Tofino exactly as `make p4-tna` does, where
// bf-p4c is installed, so a change that stops the TNA program compiling (or placing in the
// pipeline's stages) fails here: the default 16 lanes x 4 passes, and 32 lanes x 2 passes
// (-DTNA_LANES=32, which uses all 12 ingress stages). It then checks the output is what the
// controller uses: the device config loads, and every table, action, parameter, counter and
// register the controller looks up by name resolves in the program's own P4Info.
func TestTNAProgramCompiles(t *testing.T) {
	if _, err := exec.LookPath("bf-p4c"); err != nil {
		t.Skip("SKIP: bf-p4c not on PATH (the Tofino compiler; ../shared/toolchains/install-bf-p4c.sh)")
	}
	t.Run("16x4", func(t *testing.T) { checkTNA(t, "") })
	t.Run("32x2", func(t *testing.T) { checkTNA(t, "-DTNA_LANES=32") })
}

func checkTNA(t *testing.T, flags string) {
	build := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "p4.sh"), "tna", "tofino")
	cmd.Env = append(os.Environ(), "BUILD="+build, "P4FLAGS="+flags)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/p4.sh tna: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out[strings.LastIndex(string(out), "\nbuilt ")+1:])))
	dir := filepath.Join(build, "tna")

	tf, err := devconfig.LoadBfP4c(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tf.PipelineName != "ina" || tf.Profile != "pipe" || len(tf.Binary) == 0 || len(tf.BfrtJSON) == 0 {
		t.Errorf("device config: program %q, profile %q, %d-byte binary, %d-byte bf-rt.json",
			tf.PipelineName, tf.Profile, len(tf.Binary), len(tf.BfrtJSON))
	}
	if _, err := tf.PI(); err != nil {
		t.Errorf("PI device config (bf_switchd): %v", err)
	}
	if _, err := tf.Stratum(); err != nil {
		t.Errorf("Stratum device config: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ina.conf")); err != nil {
		t.Errorf("bf_switchd's conf: %v", err)
	}

	// The binary P4Info, as a TNA switch is configured (its counters and registers are barefoot.*
	// externs, which the text form cannot be parsed without).
	bin, err := os.ReadFile(filepath.Join(dir, "ina.p4info.bin"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := controlplane.SchemaFromText(bin) // every table, action, parameter and ina_*events counter
	if err != nil {
		t.Fatal(err)
	}
	if st := s.JobEventStride(); st != 32 {
		t.Errorf("ina_job_events stride %d, want 32 (job << 5 | event)", st)
	}
	if got := s.SlotOwner(); got != controlplane.RegisterSlotTag {
		t.Errorf("slot owner register %q, want %q", got, controlplane.RegisterSlotTag)
	}
	for _, r := range []string{controlplane.RegisterSlotTag, controlplane.RegisterSlotCount, "slot_seq", "slot_bitmap", "slot_state"} {
		if reg := s.Register(r); reg == nil || reg.GetSize() != 1024 || reg.GetPreamble().GetId() == 0 {
			t.Errorf("P4Info register %q: %v (clearing a job's slots resets it; 1024 slots)", r, reg)
		}
	}
	for _, c := range []string{controlplane.CounterEgressEvents, controlplane.CounterJobEgressEvents, controlplane.CounterJobEvicted} {
		if s.Counter(c) == nil {
			t.Errorf("P4Info has no counter %q, which a snapshot adds in", c)
		}
	}
}
