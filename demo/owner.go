package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/inapack/inapack/internal/procs"
)

// ledger records what one run created (namespaces, root-namespace links, child processes) in
// <dir>/owned.json as it creates them. Cleanup, on exit or by a later run after a crash, removes
// exactly what is recorded and nothing else: other checkouts and other engineers' runs on the same
// host share the namespace and link tables. A process is identified by its PID and its start time,
// so that a PID the kernel reused is never taken for ours.
type ledger struct {
	mu   sync.Mutex
	path string
	rec  ledgerRecord
}

type ledgerRecord struct {
	PID        int         `json:"pid"`
	Start      uint64      `json:"start"` // /proc/PID/stat field 22
	Namespaces []string    `json:"namespaces"`
	Links      []string    `json:"links"`
	Procs      []ownedProc `json:"procs"`
}

type ownedProc struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"` // also its process group (children start with Setpgid)
	Start uint64 `json:"start"`
}

// procStart returns a process's start time in clock ticks since boot, or false if it is gone (or
// a zombie, which has released everything but its PID).
func procStart(pid int) (uint64, bool) {
	t, err := procs.StartTicks(pid)
	return t, err == nil
}

// alive reports whether the process recorded as (pid, start) still runs.
func alive(pid int, start uint64) bool {
	s, ok := procStart(pid)
	return ok && s == start
}

// claimLedger takes dir/owned.json for this run. A record left by a run that is still alive is
// an error (two runs must not share -dir); one left by a dead run is cleaned up first, and what
// was removed is reported through say.
func claimLedger(dir string, say func(string)) (*ledger, error) {
	l := &ledger{path: filepath.Join(dir, "owned.json")}
	b, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		var old ledgerRecord
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, fmt.Errorf("%s: %v (remove it once nothing it names exists)", l.path, err)
		}
		if alive(old.PID, old.Start) {
			return nil, fmt.Errorf("another run (pid %d) owns %s: give a different -dir", old.PID, dir)
		}
		stale := &ledger{path: l.path, rec: old}
		if n := stale.cleanup(); n != "" {
			say(fmt.Sprintf("removed what a run that ended without cleaning up (pid %d) left: %s", old.PID, n))
		}
	}
	l.rec.PID = os.Getpid()
	l.rec.Start, _ = procStart(l.rec.PID)
	return l, l.save()
}

func (l *ledger) save() error {
	b, err := json.MarshalIndent(l.rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.path)
}

func (l *ledger) update(f func(r *ledgerRecord)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.rec)
	if err := l.save(); err != nil {
		fmt.Printf("demo: warning: cannot record what this run owns: %v\n", err)
	}
}

func (l *ledger) addNamespace(name string) {
	l.update(func(r *ledgerRecord) { r.Namespaces = append(r.Namespaces, name) })
}

func (l *ledger) addLink(name string) {
	l.update(func(r *ledgerRecord) { r.Links = append(r.Links, name) })
}

func (l *ledger) addProc(name string, pid int) {
	start, ok := procStart(pid)
	if !ok {
		return // already gone
	}
	l.update(func(r *ledgerRecord) { r.Procs = append(r.Procs, ownedProc{name, pid, start}) })
}

// cleanup kills the recorded processes that still run (matching start time), deletes the recorded
// links and namespaces that still exist, removes the record, and says what it removed.
func (l *ledger) cleanup() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var procs, links, nss int
	for _, p := range l.rec.Procs {
		if alive(p.PID, p.Start) {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			procs++
		}
	}
	links = runAll(l.rec.Links, "ip", "link", "del") // deleting a veth end deletes its peer
	nss = runAll(l.rec.Namespaces, "ip", "netns", "del")
	l.rec.Procs, l.rec.Links, l.rec.Namespaces = nil, nil, nil
	_ = os.Remove(l.path)
	if procs+links+nss == 0 {
		return ""
	}
	return fmt.Sprintf("%d processes, %d links, %d namespaces", procs, links, nss)
}

// runAll runs argv with each name appended, all at once (a veth's deletion waits for the kernel's
// grace period, about 25 ms here, and a demo has a link per host), and counts those that succeed.
func runAll(names []string, argv ...string) int {
	var wg sync.WaitGroup
	var ok atomic.Int32
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if exec.Command(argv[0], append(argv[1:len(argv):len(argv)], name)...).Run() == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(ok.Load())
}
