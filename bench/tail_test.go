package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An iteration takes as long as its slowest worker, and counts what every worker waited on;
// the first iteration (which waits for the peers to start) is left out.
func TestReadIterations(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"worker-j1-r0.log": "worker: job=1 rank=0 iter=0 allreduce_ms=900 timer_resent=0 fast_resent=0 window_cuts=0 timer_backoffs=0 result=exact\n" +
			"worker: job=1 rank=0 iter=1 allreduce_ms=10 timer_resent=0 fast_resent=0 window_cuts=0 timer_backoffs=0 result=exact\n" +
			"worker: job=1 rank=0 iter=2 allreduce_ms=40 timer_resent=1 fast_resent=0 window_cuts=1 timer_backoffs=1 result=exact\n" +
			"worker-summary: job=1 rank=0 status=ok\n",
		"worker-j1-r1.log": "worker: job=1 rank=1 iter=0 allreduce_ms=950 timer_resent=0 fast_resent=0 window_cuts=0 timer_backoffs=0 result=exact\n" +
			"worker: job=1 rank=1 iter=1 allreduce_ms=12 timer_resent=0 fast_resent=2 window_cuts=0 timer_backoffs=0 result=exact\n" +
			"worker: job=1 rank=1 iter=2 allreduce_ms=29 timer_resent=2 fast_resent=0 window_cuts=0 timer_backoffs=0 result=exact\n",
	}
	for name, text := range logs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	its, err := readIterations(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []iteration{{ms: 12, fast: 2, ranks: 2}, {ms: 40, timer: 3, cuts: 1, backoffs: 1, ranks: 2}}
	if len(its) != 2 || its[0] != want[0] || its[1] != want[1] {
		t.Errorf("iterations = %+v, want %+v", its, want)
	}
	s := summarizeTail(its)
	// p50 of {12, 40} is 26: only 40 is over 1.5 x p50, and it waited on the timer and a cut.
	if s.slow != 1 || s.slowTimer != 1 || s.slowCut != 1 || s.slowFast != 0 || s.slowNone != 0 || s.max != 40 {
		t.Errorf("summary = %+v", s)
	}
}

func TestReadIterationsRejectsMissingWorkers(t *testing.T) {
	dir := t.TempDir()
	line := "worker: job=1 rank=0 iter=%d allreduce_ms=1 result=exact\n"
	os.WriteFile(filepath.Join(dir, "worker-j1-r0.log"), []byte(strings.ReplaceAll(line, "%d", "0")+strings.ReplaceAll(line, "%d", "1")+strings.ReplaceAll(line, "%d", "2")), 0o644)
	os.WriteFile(filepath.Join(dir, "worker-j1-r1.log"), []byte(strings.ReplaceAll(line, "%d", "0")), 0o644)
	if _, err := readIterations(dir); err == nil || !strings.Contains(err.Error(), "1 of 2 workers") {
		t.Errorf("err = %v, want an iteration reported by 1 of 2 workers", err)
	}
	if _, err := readIterations(t.TempDir()); err == nil {
		t.Error("no logs accepted")
	}
}

// The result frames per chunk are every worker's chunks and dropped results over its chunks.
func TestResultFrames(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "worker-j1-r0.log"), []byte("worker: x\nworker-summary: job=1 rank=0 sent=100 ignored_results=3 status=ok\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "worker-j1-r1.log"), []byte("worker-summary: job=1 rank=1 sent=100 ignored_results=7 status=ok\n"), 0o644)
	if f, err := resultFrames(dir); err != nil || f != 1.05 {
		t.Errorf("resultFrames = %v, %v; want 1.05", f, err)
	}
	os.WriteFile(filepath.Join(dir, "worker-j1-r2.log"), []byte("worker: x\n"), 0o644)
	if _, err := resultFrames(dir); err == nil {
		t.Error("a log without a summary accepted")
	}
}
