package bmv2

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMininetTopologies runs one all-reduce per job through each shipped topology, on the reference
// switch, and on BMv2 where simple_switch_grpc and the compiled program are present.
func TestMininetTopologies(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: Mininet end-to-end runs are long")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIP: Mininet needs root")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import mininet").Run(); err != nil {
		t.Skip("SKIP: Mininet is not installed for /usr/bin/python3 (apt-get install mininet)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	switches := []string{"ref"}
	if _, err := exec.LookPath("simple_switch_grpc"); err == nil {
		if _, err := os.Stat(filepath.Join(root, "build", "ina.json")); err == nil {
			switches = append(switches, "bmv2")
		}
	}
	if len(switches) == 1 {
		t.Log("SKIP: BMv2 runs: simple_switch_grpc on PATH and build/ina.json (make p4) are both needed")
	}
	for _, sw := range switches {
		for _, topo := range []string{"one-rack", "two-racks", "two-jobs"} {
			t.Run(sw+"/"+topo, func(t *testing.T) {
				cmd := exec.Command("/usr/bin/python3", "bmv2/run.py", "--test", "--switch", sw,
					"--topology", filepath.Join("bmv2", "topologies", topo, "topology.json"))
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "INA_BIN="+bin)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), ": PASS") {
					t.Fatalf("run.py --test: %v\n%s", err, out)
				}
				// Leave nothing behind for the next topology.
				_ = exec.Command("mn", "-c").Run()
			})
		}
	}
}
