package procs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func needSh(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("SKIP: no sh on PATH")
	}
}

func TestStartLogsAndHandsLines(t *testing.T) {
	needSh(t)
	log := filepath.Join(t.TempDir(), "echo.log")
	var mu sync.Mutex
	var got []string
	p, err := Start("echo", log, Options{OnLine: func(l string) { mu.Lock(); got = append(got, l); mu.Unlock() }},
		"sh", "-c", "echo one; echo two >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Err() == nil {
		t.Error("exit status 3: no error")
	}
	b, _ := os.ReadFile(log)
	if want := "# sh -c echo one; echo two >&2; exit 3\none\ntwo\n"; string(b) != want {
		t.Errorf("log %q, want %q", b, want)
	}
	if strings.Join(got, ",") != "one,two" {
		t.Errorf("lines %q", got)
	}
	if tail := p.Tail(2); tail != "    one\n    two" {
		t.Errorf("tail %q", tail)
	}
}

func TestStopKillsTheGroup(t *testing.T) {
	needSh(t)
	// The shell ignores SIGTERM, so Stop must fall back to SIGKILL, and for the whole group.
	p, err := Start("sh", filepath.Join(t.TempDir(), "sh.log"), Options{}, "sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait")
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(p.Log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) == 2 {
			child = atoi(lines[1])
		}
	}
	if child == 0 {
		t.Fatal("the shell did not print its child's pid")
	}
	start := time.Now()
	p.Stop(200 * time.Millisecond)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("stopped after %v: SIGTERM was not ignored?", d)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// A zombie counts as gone: whoever adopted it reaps it in its own time.
		if _, err := StartTicks(child); err == ErrGone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's child %d survived Stop", child)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestWaitTCP(t *testing.T) {
	needSh(t)
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("quitter", filepath.Join(t.TempDir(), "q.log"), Options{}, "sh", "-c", "echo bye; exit 1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = WaitTCP(ctx, addr, p)
	if err == nil || !strings.Contains(err.Error(), "quitter exited") || !strings.Contains(err.Error(), "bye") {
		t.Errorf("exited process: %v, want its name and log", err)
	}
}

func TestStartTicksAndTime(t *testing.T) {
	before := time.Now()
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("SKIP: no sleep command:", err)
	}
	after := time.Now()
	ticks, err := StartTicks(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// Start ticks have 10 ms resolution; /proc/uptime is read to 10 ms as well.
	if got := StartTime(ticks); got.Before(before.Add(-30*time.Millisecond)) || got.After(after.Add(30*time.Millisecond)) {
		t.Errorf("started %v, want between %v and %v", got, before, after)
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := StartTicks(cmd.Process.Pid); err == ErrGone {
			break // a zombie (not yet reaped) already counts as gone
		}
		if time.Now().After(deadline) {
			t.Fatal("killed process not reported gone")
		}
	}
	cmd.Wait()
	if _, err := StartTicks(cmd.Process.Pid); err != ErrGone {
		t.Errorf("reaped process: %v, want ErrGone", err)
	}
}

// FreeAddr never returns a port twice in one process, even once the port is free again: a demo
// draws its switch's and its controller's ports one after the other, before either binds.
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		a, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[a] {
			t.Fatalf("FreeAddr returned %s twice", a)
		}
		seen[a] = true
	}
}
