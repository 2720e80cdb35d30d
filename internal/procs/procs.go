// Package procs runs the child processes of the demos and the emulated cluster: each in its own
// process group, its output in a log file, stopped together with whatever it started.
package procs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a started child process.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // path of its output
	done chan struct{}
	err  error
}

// Options tune Start; the zero value logs the output and nothing else.
type Options struct {
	// OnLine, if set, gets each line of output once it is in the log.
	OnLine func(line string)
	// KillWithParent kills the child when this process dies.
	KillWithParent bool
}

// Start runs argv as name, with stdout and stderr in a new file at logPath whose first line is
// "# " and the command line.
func Start(name, logPath string, o Options, argv ...string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "# %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	// Its own process group, to stop the child with whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.KillWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	if o.OnLine == nil {
		cmd.Stdout, cmd.Stderr = f, f
		err := cmd.Start()
		f.Close() // the child has its own descriptor
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		return p, nil
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			fmt.Fprintln(f, sc.Text())
			o.OnLine(sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr) // a line longer than the buffer: keep the child unblocked
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

// Done is closed when the process has exited and its output is in the log.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process exited; valid once Done is closed.
func (p *Proc) Err() error { return p.err }

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the exit.
func (p *Proc) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Tail is the last n lines of the log, indented, for error messages.
func (p *Proc) Tail(n int) string { return Tail(p.Log, n) }

// Tail is the last n lines of the file at path, indented, for error messages.
func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return "    " + strings.Join(lines[max(0, len(lines)-n):], "\n    ")
}

// Exited is the error that says p exited, with the end of its log.
func (p *Proc) Exited() error {
	return fmt.Errorf("%s exited: %v\n%s", p.Name, p.err, p.Tail(10))
}

// WaitTCP waits until addr accepts connections, failing early if p exits.
func WaitTCP(ctx context.Context, addr string, p *Proc) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not listen on %s: %w", p.Name, addr, ctx.Err())
		case <-p.done:
			return p.Exited()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// given holds the ports FreeAddr has returned in this process.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr is a loopback address nothing listens on now, and one this process was not given
// before. The kernel may hand a port it just freed out again: a demo's switch and its controller's
// API then got the same port, drawn one after the other before either bound it, and the API's
// readiness probe reached the switch while the controller failed to bind.
func FreeAddr() (string, error) {
	given.Lock()
	defer given.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		a := l.Addr().(*net.TCPAddr)
		l.Close()
		if !given.ports[a.Port] {
			given.ports[a.Port] = true
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("procs: 100 free loopback ports in a row were ones this process was given before")
}
