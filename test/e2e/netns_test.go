package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// binDir is where make build puts the commands (BUILD/bin, BUILD defaulting to build).
func binDir(t *testing.T) string {
	t.Helper()
	build := os.Getenv("BUILD")
	if build == "" {
		build = "build"
	}
	if !filepath.IsAbs(build) {
		build = filepath.Join("..", "..", build)
	}
	dir, err := filepath.Abs(filepath.Join(build, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// demoRun runs cmd/ina-demo (namespaces prefixed "ag") and returns its output; it skips when the
// machine lacks what the run needs.
func demoRun(t *testing.T, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root (network namespaces, veth pairs, AF_PACKET)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: iproute2 (ip) not on PATH")
	}
	bin := binDir(t)
	for _, b := range []string{"ina-demo", "refswitch", "inactl", "ina-ps", "ina-worker"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Skipf("SKIP: %s not built (run make build)", filepath.Join(bin, b))
		}
	}
	cmd := exec.Command(filepath.Join(bin, "ina-demo"), append([]string{"-bin", bin, "-dir", t.TempDir(), "-prefix", "ag"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	t.Logf("ina-demo %s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("ina-demo failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^demo: OK$`).Match(out) {
		t.Fatal("no \"demo: OK\" line")
	}
	return string(out)
}

// summed adds a field over the demo-job lines.
func summed(out, field string) int {
	n := 0
	for _, m := range regexp.MustCompile(field+`=(\d+)`).FindAllStringSubmatch(out, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// Through the reference switch and the controller: three jobs contend for 12 slots over lossy,
// duplicating, reordering links; one job loses a worker, fails with a timeout and is removed
// with its slots; the others' results are exact (ina-demo checks every value).
func TestNetnsRefSwitch(t *testing.T) {
	out := demoRun(t, "-switch", "ref", "-job", "1:2:1", "-job", "2:3:5", "-job", "3:2:3", "-kill", "3:2",
		"-slots", "12", "-window", "8", "-size", "4096", "-iters", "6", "-loss", "0.01", "-dup", "0.01", "-reorder", "0.01")
	if summed(out, "switch_completed") == 0 || summed(out, "switch_collision")+summed(out, "switch_preempted") == 0 {
		t.Error("the switch aggregated nothing, or the jobs never contended")
	}
	if !strings.Contains(out, "status=failed_as_expected") || !strings.Contains(out, "slots_held_after=0") {
		t.Error("the killed job was not failed and removed as expected")
	}
}

// The same through BMv2, where it is installed.
func TestNetnsBMv2(t *testing.T) {
	if _, err := exec.LookPath("simple_switch_grpc"); err != nil {
		t.Skip("SKIP: simple_switch_grpc not on PATH")
	}
	json := ""
	for _, p := range []string{"build/p4/ina.json", "build/ina.json"} {
		if _, err := os.Stat(filepath.Join("..", "..", p)); err == nil {
			json = p
		}
	}
	if json == "" {
		t.Skip("SKIP: no compiled P4 program (build/p4/ina.json; run make p4)")
	}
	out := demoRun(t, "-switch", "bmv2", "-bmv2-json", json, "-job", "1:2:1", "-job", "2:2:5", "-slots", "12", "-window", "8",
		"-size", "2048", "-iters", "4")
	if summed(out, "switch_completed") == 0 {
		t.Error("BMv2 aggregated nothing")
	}
}
