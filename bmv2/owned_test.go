package bmv2

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inapack/inapack/internal/procs"
)

// procStart reads a process's start time as owned.py does (field 22 of /proc/PID/stat).
func procStart(t *testing.T, pid int) uint64 {
	t.Helper()
	v, err := procs.StartTicks(pid)
	if err != nil {
		t.Skip("SKIP: no /proc start time on this system:", err)
	}
	return v
}

// make stop (owned.py stop) removes what the recorded run owns and nothing else: a process whose
// PID matches but whose start time does not is another's, and so is an unrecorded link.
func TestStopRemovesOnlyWhatTheRunOwns(t *testing.T) {
	python(t)
	state := t.TempDir()
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	ours, notOurs := start(), start()
	rec := map[string]any{
		"pid": ours.Process.Pid, "start": procStart(t, ours.Process.Pid) + 1, // a dead owner whose PID was reused
		"procs": []map[string]any{
			{"name": "switch", "pid": ours.Process.Pid, "start": procStart(t, ours.Process.Pid)},
			{"name": "reused", "pid": notOurs.Process.Pid, "start": procStart(t, notOurs.Process.Pid) + 1},
		},
		"links": []string{},
	}
	root := os.Geteuid() == 0
	ourLink, otherLink := fmt.Sprintf("uxo%d", os.Getpid()%100000), fmt.Sprintf("uxn%d", os.Getpid()%100000)
	if root {
		for _, l := range []string{ourLink, otherLink} {
			if out, err := exec.Command("ip", "link", "add", l, "type", "veth", "peer", "name", l+"p").CombinedOutput(); err != nil {
				t.Fatalf("ip link add: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("ip", "link", "del", l).Run() })
		}
		rec["links"] = []string{ourLink}
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(state, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "owned.py", "stop", state).CombinedOutput()
	if !root {
		if err == nil || !strings.Contains(string(out), "is root's") {
			t.Fatalf("stop as non-root: %v: %s", err, out)
		}
		t.Skip("SKIP: the rest needs root (the run it stops is root's)")
	}
	if err != nil || !strings.Contains(string(out), "removed leftovers: 1 processes, 1 links") {
		t.Fatalf("stop: %v: %s", err, out)
	}
	done := make(chan struct{})
	go func() { ours.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the recorded process still runs")
	}
	if syscall.Kill(notOurs.Process.Pid, 0) != nil {
		t.Error("a process whose start time does not match the record was killed")
	}
	if exec.Command("ip", "link", "show", ourLink).Run() == nil {
		t.Error("the recorded link is still there")
	}
	if exec.Command("ip", "link", "show", otherLink).Run() != nil {
		t.Error("an unrecorded link was deleted")
	}
	if _, err := os.Stat(filepath.Join(state, "run.json")); err == nil {
		t.Error("run.json left behind")
	}
}
