package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process whose output goes to a log file, each line also handed to onLine.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// procs tracks every child the demo started, to stop them on exit.
type procs struct {
	mu    sync.Mutex
	all   []*proc
	dir   string
	trace bool
	owned *ledger // records every child, so a later run can remove them if this one is killed
}

func (ps *procs) start(name string, onLine func(string), argv ...string) (*proc, error) {
	logPath := filepath.Join(ps.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// Own process group, to stop a child with whatever it started; killed with the demo.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	fmt.Fprintf(f, "# %q\n", argv)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	if ps.owned != nil {
		ps.owned.addProc(name, cmd.Process.Pid)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if ps.trace {
				fmt.Printf("[%s] %s\n", name, line)
			}
			if onLine != nil {
				onLine(line)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-scanned
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM to a child's process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (ps *procs) stopAll() {
	ps.mu.Lock()
	all := ps.all
	ps.all = nil
	ps.mu.Unlock()
	for i := len(all) - 1; i >= 0; i-- {
		all[i].stop(3 * time.Second)
	}
}

// tail returns the last n lines of a child's log, for error messages.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "    " + strings.Join(lines, "\n    ") + "\n"
}
