package emu

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is a switch or controller process of the cluster, its output in Dir/<name>.log.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (c *Cluster) start(name string, argv ...string) (*proc, error) {
	logPath := filepath.Join(c.cfg.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "# %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	f.Close()
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	c.procs = append(c.procs, p)
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
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

// tail is the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return "    " + strings.Join(lines[max(0, len(lines)-n):], "\n    ")
}

// waitTCP waits until addr accepts connections, failing early if p exits.
func waitTCP(ctx context.Context, addr string, p *proc) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not listen on %s: %w", p.name, addr, ctx.Err())
		case <-p.done:
			return fmt.Errorf("%s exited: %v\n%s", p.name, p.err, p.tail(10))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
