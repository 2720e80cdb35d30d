package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/procs"
)

// HostAccess says how to run a command on a host: in a named network namespace (ip netns exec),
// or in the network namespace of a process (nsenter; a Mininet host's shell).
type HostAccess struct {
	Netns string `json:"netns,omitempty"`
	PID   int    `json:"pid,omitempty"`
	// Iface is the host's interface towards its switch (default eth0).
	Iface string `json:"iface,omitempty"`
}

// LoadHosts reads a hosts file: a JSON object, host name -> HostAccess.
func LoadHosts(path string) (map[string]HostAccess, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hosts file: %w", err)
	}
	var hs map[string]HostAccess
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hs); err != nil {
		return nil, fmt.Errorf("hosts file %s: %w", path, err)
	}
	for name, h := range hs {
		if (h.Netns == "") == (h.PID == 0) {
			return nil, fmt.Errorf("hosts file %s: host %s: give exactly one of netns and pid", path, name)
		}
	}
	return hs, nil
}

func (h HostAccess) iface() string {
	if h.Iface == "" {
		return "eth0"
	}
	return h.Iface
}

// Wrap prefixes argv so that it runs in the host's network namespace. The zero HostAccess is this
// machine's own namespace (argv as it is); LoadHosts never gives it.
func (h HostAccess) Wrap(argv ...string) []string {
	if h.Netns == "" && h.PID == 0 {
		return argv
	}
	if h.Netns != "" {
		return append([]string{"ip", "netns", "exec", h.Netns}, argv...)
	}
	return append([]string{"nsenter", "-t", strconv.Itoa(h.PID), "-n", "--"}, argv...)
}

// run runs a short command on the host and returns its error with its output.
func (h HostAccess) run(argv ...string) error {
	full := h.Wrap(argv...)
	out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Proc is an agent process the scheduler started. Agents run in their own session with their
// output in a log file, so they outlive a restart of the scheduler, which then finds them again
// by PID and start time.
type Proc struct {
	Role string `json:"role"` // "ps" or "worker"
	Rank int    `json:"rank"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// StartTicks is the process's start time (/proc/PID/stat field 22): a PID reused by another
	// process has another.
	StartTicks uint64 `json:"start_ticks"`
	Log        string `json:"log"`
}

func (p *Proc) label() string {
	if p.Role == "ps" {
		return "parameter server on " + p.Host
	}
	return fmt.Sprintf("worker rank %d on %s", p.Rank, p.Host)
}

// agentProcs starts agents and tells whether they still run. Children started by this process are
// reaped here (their exit status kept); processes found again after a restart are watched by PID.
type agentProcs struct {
	mu     sync.Mutex
	exited map[int]string // pid -> how a child of ours ended
	mine   map[int]bool
}

func newProcs() *agentProcs { return &agentProcs{exited: map[int]string{}, mine: map[int]bool{}} }

func (ps *agentProcs) start(h HostAccess, role string, rank int, host, logPath string, argv ...string) (Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Proc{}, err
	}
	defer f.Close()
	full := h.Wrap(argv...)
	fmt.Fprintf(f, "# %s\n", strings.Join(full, " "))
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	// A session of its own: signals aimed at the scheduler's process group do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Proc{}, fmt.Errorf("start %s on %s: %w", role, host, err)
	}
	p := Proc{Role: role, Rank: rank, Host: host, PID: cmd.Process.Pid, Log: logPath}
	p.StartTicks, _ = procs.StartTicks(p.PID)
	ps.mu.Lock()
	ps.mine[p.PID] = true
	ps.mu.Unlock()
	go func() {
		err := cmd.Wait()
		how := "exit status 0"
		if err != nil {
			how = err.Error()
		}
		ps.mu.Lock()
		ps.exited[p.PID] = how
		ps.mu.Unlock()
	}()
	return p, nil
}

// alive reports whether p still runs; if not, how it ended when known.
func (ps *agentProcs) alive(p *Proc) (bool, string) {
	ps.mu.Lock()
	how, done := ps.exited[p.PID]
	mine := ps.mine[p.PID]
	ps.mu.Unlock()
	if mine {
		return !done, how
	}
	t, err := procs.StartTicks(p.PID)
	if err != nil || t != p.StartTicks {
		return false, "ended while the scheduler was not watching"
	}
	return true, ""
}

// stop sends SIGTERM to p's session (its process group), then SIGKILL after grace.
func (ps *agentProcs) stop(p *Proc, grace time.Duration) {
	if ok, _ := ps.alive(p); !ok {
		return
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if ok, _ := ps.alive(p); !ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	for range 100 {
		if ok, _ := ps.alive(p); !ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// started is when p's process started (10 ms resolution); zero if unknown.
func (p *Proc) started() time.Time { return procs.StartTime(p.StartTicks) }
