package demo

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeRecord(t *testing.T, dir string, r ledgerRecord) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owned.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClaimLedgerRefusesLiveOwner(t *testing.T) {
	dir := t.TempDir()
	start, ok := procStart(os.Getpid())
	if !ok {
		t.Skip("SKIP: no /proc on this system")
	}
	writeRecord(t, dir, ledgerRecord{PID: os.Getpid(), Start: start})
	if _, err := claimLedger(dir, func(string) {}); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Fatalf("claim over a live owner: %v", err)
	}
}

// A dead run's record: its processes are killed only when PID and start time both match.
func TestClaimLedgerCleansDeadOwner(t *testing.T) {
	if _, ok := procStart(os.Getpid()); !ok {
		t.Skip("SKIP: no /proc on this system")
	}
	dir := t.TempDir()
	ours := exec.Command("sleep", "60")
	ours.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	notOurs := exec.Command("sleep", "60")
	notOurs.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for _, c := range []*exec.Cmd{ours, notOurs} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	oursStart, _ := procStart(ours.Process.Pid)
	notOursStart, _ := procStart(notOurs.Process.Pid)
	writeRecord(t, dir, ledgerRecord{
		PID: ours.Process.Pid, Start: oursStart + 1, // the owner: that PID now names another process
		Procs: []ownedProc{
			{Name: "switch", PID: ours.Process.Pid, Start: oursStart},
			{Name: "reused", PID: notOurs.Process.Pid, Start: notOursStart + 1},
		},
	})
	var said []string
	l, err := claimLedger(dir, func(s string) { said = append(said, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "1 processes") {
		t.Errorf("report %q: want one line naming 1 process", said)
	}
	done := make(chan error, 1)
	go func() { done <- ours.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded process still runs")
	}
	if !alive(notOurs.Process.Pid, notOursStart) {
		t.Error("a process whose start time does not match the record was killed")
	}
	b, err := os.ReadFile(filepath.Join(dir, "owned.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec ledgerRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.PID != os.Getpid() || len(rec.Procs) != 0 {
		t.Errorf("new record %s (%v): want this process as owner and nothing owned yet", b, err)
	}
	if l.cleanup(); fileExists(filepath.Join(dir, "owned.json")) {
		t.Error("cleanup left owned.json")
	}
}

func TestValidPrefix(t *testing.T) {
	for p, ok := range map[string]bool{"ina": true, runPrefix(): true, "": false, "abcdefghijk": false, "in-a": false, "INA": false} {
		if err := validPrefix(p); (err == nil) != ok {
			t.Errorf("validPrefix(%q) = %v", p, err)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
