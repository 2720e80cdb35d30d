package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestBuildOnce(t *testing.T) {
	dir := Build(t, "./cmd/ina-worker")
	out, _ := exec.Command(filepath.Join(dir, "ina-worker"), "-h").CombinedOutput()
	if !strings.Contains(string(out), "-iface") {
		t.Errorf("ina-worker -h printed %q", out)
	}
	if again := Build(t, "./cmd/ina-worker"); again != dir {
		t.Errorf("second Build: %s, want the first's %s", again, dir)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
