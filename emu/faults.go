package emu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/procs"
)

// The faults a chaos run injects into a running cluster: its switch and controller processes
// killed and restarted or frozen, a host's link cut, the reference switch's egress faults changed.

// controller names the controller among the cluster's processes.
const controller = "inactl"

// startSwitch starts (or restarts) a switch with the command line it was first given; a restart
// logs to a file of its own (switch-NAME.rN.log), so the log of the killed process stays.
func (c *Cluster) startSwitch(ctx context.Context, name string) error {
	p, err := c.startNamed(name, "switch-"+name)
	if err != nil {
		return err
	}
	c.pids[name] = p.Cmd.Process.Pid
	argv := c.argv[name]
	var grpcAddr string
	for i, a := range argv {
		if (a == "--grpc-addr" || a == "--grpc-server-addr") && i+1 < len(argv) {
			grpcAddr = argv[i+1]
		}
	}
	if err := procs.WaitTCP(ctx, grpcAddr, p); err != nil {
		return err
	}
	if c.cfg.Switch == "bmv2" {
		return c.bmv2Rates(name, c.rates[name])
	}
	return nil
}

// StartController starts (or restarts) the controller; it returns once its API listens.
func (c *Cluster) StartController(ctx context.Context) error {
	p, err := c.startNamed(controller, controller)
	if err != nil {
		return err
	}
	return procs.WaitTCP(ctx, c.API, p)
}

func (c *Cluster) startNamed(key, logName string) (*procs.Proc, error) {
	if n := c.restarts[key]; n > 0 {
		logName = fmt.Sprintf("%s.r%d", logName, n)
	}
	c.restarts[key]++
	p, err := c.start(logName, c.argv[key]...)
	if err != nil {
		return nil, err
	}
	c.proc[key] = p
	return p, nil
}

// KillSwitch kills a switch process (SIGKILL: its tables, registers and slots are lost).
func (c *Cluster) KillSwitch(name string) error { return c.kill(name) }

// RestartSwitch starts a killed switch again, empty, on the same ports and addresses; the
// controller finds it and pushes the pipeline and entries again.
func (c *Cluster) RestartSwitch(ctx context.Context, name string) error {
	return c.startSwitch(ctx, name)
}

// KillController kills the controller (SIGKILL); the switches keep forwarding.
func (c *Cluster) KillController() error { return c.kill(controller) }

func (c *Cluster) kill(key string) error {
	p, ok := c.proc[key]
	if !ok {
		return fmt.Errorf("emu: no process %q", key)
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGCONT) // a frozen process dies too
	if err := syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("emu: kill %s: %w", key, err)
	}
	select {
	case <-p.Done():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("emu: %s did not die within 10 s of SIGKILL", key)
	}
}

// FreezeSwitch stops a switch process (SIGSTOP) until ThawSwitch: frames queue in its rings and
// its P4Runtime server does not answer.
func (c *Cluster) FreezeSwitch(name string) error { return c.signal(name, syscall.SIGSTOP) }

// ThawSwitch lets a frozen switch run again (SIGCONT).
func (c *Cluster) ThawSwitch(name string) error { return c.signal(name, syscall.SIGCONT) }

func (c *Cluster) signal(key string, sig syscall.Signal) error {
	p, ok := c.proc[key]
	if !ok {
		return fmt.Errorf("emu: no process %q", key)
	}
	if err := syscall.Kill(-p.Cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("emu: %v to %s: %w", sig, key, err)
	}
	return nil
}

// SetHostLink takes a host's link down or up at the switch's end: the host's interface loses its
// carrier, as when a cable is pulled.
func (c *Cluster) SetHostLink(host string, up bool) error {
	l, ok := c.hostLink[host]
	if !ok {
		return fmt.Errorf("emu: host %q has no link", host)
	}
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("link", "set", l, state)
}

// SetFaults sets a reference switch's egress fault rates (its PUT /faults, Config.FaultAPI): a
// JSON object such as {"loss": 1} or {"dup": 0.05, "reorder": 0.05, "seed": 7}; {} turns them off.
func (c *Cluster) SetFaults(ctx context.Context, name string, faults map[string]any) error {
	addr, ok := c.stats[name]
	if !ok || !c.cfg.FaultAPI {
		return fmt.Errorf("emu: switch %s has no fault API (reference switches started with FaultAPI)", name)
	}
	b, err := json.Marshal(faults)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+"/faults", bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("emu: switch %s: PUT /faults: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("emu: switch %s: PUT /faults %s: %s: %s", name, b, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Leftovers lists what still runs or exists in the hosts' namespaces: processes, and interfaces
// other than lo and eth0 (a job's private PS link). Once every job has ended it must be empty.
func (c *Cluster) Leftovers() []string {
	var out []string
	for _, h := range slices.Sorted(maps.Keys(c.Hosts)) {
		ns := c.Hosts[h].Netns
		if b, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				cmd, _ := exec.Command("ps", "-o", "args=", "-p", pid).Output()
				out = append(out, fmt.Sprintf("%s: process %s (%s)", h, pid, strings.TrimSpace(string(cmd))))
			}
		}
		b, err := exec.Command("ip", "-n", ns, "-o", "link", "show").Output()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: ip link: %v", h, err))
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if name != "lo" && name != "eth0" {
				out = append(out, fmt.Sprintf("%s: interface %s", h, name))
			}
		}
	}
	return out
}

// Residue lists the namespaces and links with the cluster's prefix that still exist: after Close
// it must be empty.
func Residue(prefix string) []string {
	var out []string
	if b, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
				out = append(out, "namespace "+f[0])
			}
		}
	}
	if b, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 {
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				if strings.HasPrefix(name, prefix+"v") {
					out = append(out, "link "+name)
				}
			}
		}
	}
	return out
}

// FaultFields are the fault rates a reference switch's fault API knows (the keys of GET /faults).
func (c *Cluster) FaultFields(ctx context.Context, name string) ([]string, error) {
	addr, ok := c.stats[name]
	if !ok || !c.cfg.FaultAPI {
		return nil, fmt.Errorf("emu: switch %s has no fault API", name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/faults", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("emu: switch %s: GET /faults: %w", name, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("emu: switch %s: GET /faults: %w", name, err)
	}
	return slices.Sorted(maps.Keys(m)), nil
}
