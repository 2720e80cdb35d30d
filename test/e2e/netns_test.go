package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inapack/inapack/internal/testbin"
	"github.com/inapack/inapack/p4src/wire"
)

// binDir is the directory of the commands the namespace tests run.
func binDir(t *testing.T) string {
	return testbin.Build(t, "./cmd/ina-demo", "./cmd/refswitch", "./cmd/inactl", "./cmd/ina-ps", "./cmd/ina-worker")
}

func TestMain(m *testing.M) { testbin.Main(m) }

// demoRun runs cmd/ina-demo and returns its output; it skips when the machine lacks what the run
// needs. ina-demo names its namespaces and links with a prefix unique to the run.
func demoRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := demoExec(t, args...)
	if err != nil {
		t.Fatalf("ina-demo failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^demo: OK$`).MatchString(out) {
		t.Fatal("no \"demo: OK\" line")
	}
	return out
}

// demoExec is demoRun for a run that may fail: its output and exit error.
func demoExec(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root (network namespaces, veth pairs, AF_PACKET)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: iproute2 (ip) not on PATH")
	}
	bin := binDir(t)
	cmd := exec.Command(filepath.Join(bin, "ina-demo"), append([]string{"-bin", bin, "-dir", t.TempDir()}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	t.Logf("ina-demo %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
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
		"-active-slots", "12", "-window", "8", "-size", "4096", "-iters", "6", "-loss", "0.01", "-dup", "0.01", "-reorder", "0.01")
	if summed(out, "switch_completed") == 0 || summed(out, "switch_collision")+summed(out, "switch_preempted") == 0 {
		t.Error("the switch aggregated nothing, or the jobs never contended")
	}
	if !strings.Contains(out, "status=failed_as_expected") || !strings.Contains(out, "slots_held_after=0") {
		t.Error("the killed job was not failed and removed as expected")
	}
}

// Eight jobs on eight slots through the reference switch's rings, with 5% loss, duplication and
// reordering on every port: every value exact (ina-demo checks them), and the PS emits exactly
// one result per chunk, none missing and none twice.
func TestNetnsEightJobsLossy(t *testing.T) {
	args := []string{"-switch", "ref", "-active-slots", "8", "-window", "4", "-size", "2048", "-iters", "3",
		"-loss", "0.05", "-dup", "0.05", "-reorder", "0.05", "-timeout", "180s"}
	for j := 1; j <= 8; j++ {
		args = append(args, "-job", fmt.Sprintf("%d:2:%d", j, j%4))
	}
	out := demoRun(t, args...)
	lines := regexp.MustCompile(`(?m)^demo-job: .*$`).FindAllString(out, -1)
	if len(lines) != 8 {
		t.Fatalf("%d demo-job lines, want 8", len(lines))
	}
	for _, l := range lines {
		if want := 3 * ((2048 + wire.IntegrityWidth - 1) / wire.IntegrityWidth); summed(l, "ps_results") != want || !strings.Contains(l, "status=ok") {
			t.Errorf("want ps_results=%d and status=ok: %s", want, l)
		}
	}
	if summed(out, "switch_collision")+summed(out, "switch_preempted") == 0 {
		t.Error("eight jobs on eight slots never contended")
	}
}

// Through the reference switch binary with its --corrupt fault on every port (one value bit of 2%
// of the INA frames flipped after the checksums): with the integrity lane on (the default) every
// result is exact and the corruptions were caught; the same run with it off delivers wrong sums.
func TestNetnsCorruption(t *testing.T) {
	args := []string{"-switch", "ref", "-job", "1:3:1", "-job", "2:2:5", "-active-slots", "16", "-window", "8",
		"-size", "4096", "-iters", "4", "-corrupt", "0.02", "-seed", "3"}
	out := demoRun(t, args...)
	if caught := summed(out, "ps_corrupt") + summed(out, "worker_corrupt"); caught == 0 {
		t.Error("integrity on: no corruption was caught")
	}
	out, err := demoExec(t, append(args, "-integrity=false")...)
	if err == nil || !regexp.MustCompile(`(?m)^demo: FAIL: .*exact=`).MatchString(out) {
		t.Errorf("integrity off: want a FAIL for inexact results, got %v", err)
	}
	if summed(out, "ps_corrupt")+summed(out, "worker_corrupt") != 0 {
		t.Error("integrity off: corruption counted as caught")
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
	out := demoRun(t, "-switch", "bmv2", "-bmv2-json", json, "-job", "1:2:1", "-job", "2:2:5", "-active-slots", "12", "-window", "8",
		"-size", "2048", "-iters", "4")
	if summed(out, "switch_completed") == 0 {
		t.Error("BMv2 aggregated nothing")
	}
}

// Two workers of a job per emulated host (ina-demo -per-host 2: members 0 and 1 behind the host's
// one switch port; job 1's four workers on two hosts, job 2's two on one), through the reference
// switch and,
// where installed, BMv2: every all-reduce exact (ina-demo checks every value) and the switch
// aggregated. A switch that told the two apart by port alone never completes job 1's chunks.
func TestNetnsTwoWorkersPerHost(t *testing.T) {
	for _, target := range []string{"ref", "bmv2"} {
		t.Run(target, func(t *testing.T) {
			args := []string{"-switch", target, "-per-host", "2", "-job", "1:4:1", "-job", "2:2:5", "-active-slots", "16",
				"-window", "8", "-size", "2048", "-iters", "4"}
			if target == "bmv2" {
				if _, err := exec.LookPath("simple_switch_grpc"); err != nil {
					t.Skip("SKIP: simple_switch_grpc not on PATH")
				}
				if _, err := os.Stat(filepath.Join("..", "..", "build", "ina.json")); err != nil {
					t.Skip("SKIP: no compiled P4 program (build/ina.json; run make p4)")
				}
				args = append(args, "-bmv2-json", "build/ina.json")
			}
			out := demoRun(t, args...)
			if n := len(regexp.MustCompile(`(?m)^demo-job: .*status=ok`).FindAllString(out, -1)); n != 2 {
				t.Errorf("%d jobs ok, want 2", n)
			}
			if summed(out, "switch_completed") == 0 {
				t.Error("the switch aggregated nothing")
			}
		})
	}
}

// Both agents on two threads (ina-demo -threads 2: ina-ps and every ina-worker on two sockets,
// each serving the chunks whose seq is its index mod 2) through the reference switch with loss,
// duplication and reordering on every port: every value exact (ina-demo checks them), and the
// PS's lanes together emit exactly one result per chunk, none missing and none twice.
func TestNetnsTwoThreads(t *testing.T) {
	const size, iters = 4096, 4
	dir := t.TempDir()
	out := demoRun(t, "-dir", dir, "-switch", "ref", "-threads", "2", "-job", "1:3:1", "-job", "2:2:5:off", "-active-slots", "16",
		"-window", "8", "-size", fmt.Sprint(size), "-iters", fmt.Sprint(iters), "-loss", "0.02", "-dup", "0.02", "-reorder", "0.02")
	if log, err := os.ReadFile(filepath.Join(dir, "ps.log")); err != nil || !strings.Contains(string(log), "2 thread(s)") {
		t.Errorf("ina-ps did not say it serves on 2 threads (%v):\n%s", err, log)
	}
	lines := regexp.MustCompile(`(?m)^demo-job: .*$`).FindAllString(out, -1)
	if len(lines) != 2 {
		t.Fatalf("%d demo-job lines, want 2", len(lines))
	}
	for _, l := range lines {
		if want := iters * ((size + wire.IntegrityWidth - 1) / wire.IntegrityWidth); summed(l, "ps_results") != want || !strings.Contains(l, "status=ok") {
			t.Errorf("want ps_results=%d and status=ok: %s", want, l)
		}
	}
	if summed(out, "switch_completed") == 0 {
		t.Error("the switch aggregated nothing")
	}
}
