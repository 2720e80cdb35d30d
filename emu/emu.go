package emu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/internal/ipdrop"
	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/p4src/wire"
)

// Config is one emulated cluster.
type Config struct {
	Topology string // topology.json
	// Prefix starts every namespace and link name (at most 6 characters; default "e" and the
	// process id): runs with different prefixes never meet.
	Prefix string
	// Switch is "ref" (the reference switch) or "bmv2" (simple_switch_grpc with BMv2JSON).
	Switch   string
	BMv2JSON string
	P4Info   string
	Bin      string // refswitch and inactl (default build/bin)
	Dir      string // generated configs and logs
	// Settings override the topology's ina settings on every switch (nil: keep them).
	Settings *cp.Settings
	// FaultAPI starts reference switches with --fault-api (SetFaults changes their loss,
	// duplication and reordering while they run).
	FaultAPI bool
}

// Cluster is a running emulated cluster.
type Cluster struct {
	Topo *topology.Topology
	// Hosts is the hosts file for the scheduler: host -> its namespace.
	Hosts map[string]HostNS
	// API is the controller's job API address.
	API string
	cfg Config

	hostNS []string // namespaces created
	links  []string // root-side links created (deleting one end deletes its peer)
	procs  []*procs.Proc
	thrift map[string]string // BMv2: switch -> thrift port
	stats  map[string]string // reference switch -> its counters' address (GET /stats)
	pids   map[string]int    // switch -> its process id
	// How each switch and the controller were started, to restart them (faults.go).
	argv     map[string][]string // switch or "inactl" -> command line
	rates    map[string][]swPort // BMv2 switch -> its ports, for the queue rates after a restart
	proc     map[string]*procs.Proc
	restarts map[string]int
	// hostLink is the switch-side interface of each host's link.
	hostLink map[string]string
}

// HostNS is how a host is reached (the scheduler's hosts-file entry).
type HostNS struct {
	Netns string `json:"netns"`
	Iface string `json:"iface"`
}

// Start builds the cluster; on error everything built so far is removed.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("emu: needs root (network namespaces, veth links, AF_PACKET)")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("e%d", os.Getpid()%100000)
	}
	if len(cfg.Prefix) > 6 {
		return nil, fmt.Errorf("emu: prefix %q: at most 6 characters (link names are limited to 15)", cfg.Prefix)
	}
	if cfg.Bin == "" {
		cfg.Bin = "build/bin"
	}
	if cfg.Switch != "ref" && cfg.Switch != "bmv2" {
		return nil, fmt.Errorf("emu: switch %q: want ref or bmv2", cfg.Switch)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	topo, err := topology.Load(cfg.Topology)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Topo: topo, Hosts: map[string]HostNS{}, cfg: cfg, thrift: map[string]string{}, stats: map[string]string{},
		pids: map[string]int{}, argv: map[string][]string{}, rates: map[string][]swPort{}, proc: map[string]*procs.Proc{},
		restarts: map[string]int{}, hostLink: map[string]string{}}
	if err := c.build(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) build(ctx context.Context) error {
	ports, err := c.wire()
	if err != nil {
		return err
	}
	eps, err := c.startSwitches(ctx, ports)
	if err != nil {
		return err
	}
	return c.startController(ctx, eps)
}

// swPort is one switch port: its interface and its egress rate (the link's bandwidth).
type swPort struct {
	port  int
	iface string
	mbps  float64
}

// wire creates a namespace per host and a veth pair per link; it returns each switch's ports.
func (c *Cluster) wire() (map[string][]swPort, error) {
	t := c.Topo
	ports := map[string][]swPort{}
	n := 0
	newLink := func() string { n++; return fmt.Sprintf("%sv%d", c.cfg.Prefix, n) }
	for _, h := range slices.Sorted(maps.Keys(t.Hosts)) {
		ns := c.cfg.Prefix + "-" + h
		if err := ipCmd("netns", "add", ns); err != nil {
			return nil, err
		}
		c.hostNS = append(c.hostNS, ns)
		c.Hosts[h] = HostNS{Netns: ns, Iface: "eth0"}
		_ = exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1").Run()
		_ = exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1").Run()
		if err := ipCmd("-n", ns, "link", "set", "lo", "up"); err != nil {
			return nil, err
		}
	}
	for _, l := range t.Links {
		a, pa, err := t.ParseEndpoint(l.A)
		if err != nil {
			return nil, err
		}
		b, pb, err := t.ParseEndpoint(l.B)
		if err != nil {
			return nil, err
		}
		la, lb := newLink(), newLink()
		if err := ipCmd("link", "add", la, "type", "veth", "peer", "name", lb); err != nil {
			return nil, err
		}
		c.links = append(c.links, la)
		for _, e := range []struct {
			node, link string
			port       int
		}{{a, la, pa}, {b, lb, pb}} {
			if h, ok := t.Hosts[e.node]; ok {
				ns := c.Hosts[e.node].Netns
				if e.link == la {
					c.hostLink[e.node] = lb
				} else {
					c.hostLink[e.node] = la
				}
				// No IP address on eth0: the agents speak AF_PACKET, and without an address the kernel
				// ignores INA frames instead of answering with ICMP (ipdrop ends them at eth0's
				// ingress, after the agents' copy and before the IP stack).
				for _, s := range [][]string{
					{"link", "set", e.link, "netns", ns},
					{"-n", ns, "link", "set", e.link, "name", "eth0"},
					{"-n", ns, "link", "set", "eth0", "address", h.MAC},
					{"-n", ns, "link", "set", "eth0", "mtu", "9500"},
					{"-n", ns, "link", "set", "eth0", "up"},
				} {
					if err := ipCmd(s...); err != nil {
						return nil, err
					}
				}
				continue
			}
			_ = exec.Command("sysctl", "-qw", "net.ipv6.conf."+e.link+".disable_ipv6=1").Run()
			for _, s := range [][]string{{"link", "set", e.link, "mtu", "9500"}, {"link", "set", e.link, "up"}} {
				if err := ipCmd(s...); err != nil {
					return nil, err
				}
			}
			ports[e.node] = append(ports[e.node], swPort{port: e.port, iface: e.link, mbps: l.Mbps})
		}
	}
	if err := ipdrop.Namespaces(c.hostNS, "eth0"); err != nil {
		fmt.Fprintf(os.Stderr, "emu: %v: the hosts' kernels will take in every frame they receive (slower, not wrong)\n", err)
	}
	// Wait for carrier: a switch that opens a port before the link is up loses its first frames.
	for _, l := range c.links {
		for i := 0; i < 100; i++ {
			b, _ := os.ReadFile("/sys/class/net/" + l + "/carrier")
			if strings.TrimSpace(string(b)) == "1" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ports, nil
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) startSwitches(ctx context.Context, ports map[string][]swPort) (map[string]topology.Endpoint, error) {
	eps := map[string]topology.Endpoint{}
	for _, name := range slices.Sorted(maps.Keys(c.Topo.Switches)) {
		grpcAddr, err := procs.FreeAddr()
		if err != nil {
			return nil, err
		}
		ps := ports[name]
		slices.SortFunc(ps, func(a, b swPort) int { return a.port - b.port })
		var argv []string
		ep := topology.Endpoint{Address: grpcAddr, Target: c.cfg.Switch}
		if c.cfg.Switch == "ref" {
			statsAddr, err := procs.FreeAddr()
			if err != nil {
				return nil, err
			}
			c.stats[name] = statsAddr
			argv = []string{filepath.Join(c.cfg.Bin, "refswitch"), "--grpc-addr", grpcAddr, "--device-id", "1", "--log-level", "warn",
				"--stats-addr", statsAddr}
			if c.cfg.FaultAPI {
				argv = append(argv, "--fault-api")
			}
			for _, p := range ps {
				argv = append(argv, "-i", fmt.Sprintf("%d@%s", p.port, p.iface))
				if p.mbps > 0 {
					argv = append(argv, "--rate", fmt.Sprintf("%d@%g", p.port, p.mbps))
				}
			}
		} else {
			thrift, err := procs.FreeAddr()
			if err != nil {
				return nil, err
			}
			_, tport, _ := net.SplitHostPort(thrift)
			c.thrift[name] = tport
			argv = []string{"simple_switch_grpc", "--no-p4", "--device-id", "1", "--thrift-port", tport}
			for _, p := range ps {
				argv = append(argv, "-i", fmt.Sprintf("%d@%s", p.port, p.iface))
			}
			argv = append(argv, "--", "--grpc-server-addr", grpcAddr, "--cpu-port", "255")
			ep.DeviceConfig, ep.ThriftAddress = c.cfg.BMv2JSON, thrift
		}
		c.argv[name], c.rates[name] = argv, ps
		if err := c.startSwitch(ctx, name); err != nil {
			return nil, err
		}
		eps[name] = ep
	}
	return eps, nil
}

// bmv2Rates limits BMv2's egress queues to the links' rates (simple_switch_CLI set_queue_rate
// takes packets per second: the rate over the size of a full INA frame).
func (c *Cluster) bmv2Rates(name string, ps []swPort) error {
	var script strings.Builder
	for _, p := range ps {
		if p.mbps > 0 {
			fmt.Fprintf(&script, "set_queue_rate %d %d\n", int(p.mbps*1e6/8/wire.FrameLen), p.port)
		}
	}
	if script.Len() == 0 {
		return nil
	}
	cmd := exec.Command("simple_switch_CLI", "--thrift-port", c.thrift[name])
	cmd.Stdin = strings.NewReader(script.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("simple_switch_CLI set_queue_rate on %s: %v: %s", name, err, out)
	}
	return nil
}

func (c *Cluster) startController(ctx context.Context, eps map[string]topology.Endpoint) error {
	t := *c.Topo
	t.INA.Jobs = nil // the scheduler adds jobs through the API
	if c.cfg.Settings != nil {
		t.INA.Settings = c.cfg.Settings
	}
	cfg, err := t.Derive(eps)
	if err != nil {
		return err
	}
	if c.cfg.Switch == "bmv2" && c.cfg.P4Info != "" {
		for i := range cfg.Switches {
			cfg.Switches[i].P4Info = c.cfg.P4Info
		}
	}
	apiAddr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	metrics, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	cfg.Controller = cp.ControllerConfig{APIAddress: apiAddr, MetricsAddress: metrics,
		StateFile: filepath.Join(c.cfg.Dir, "inactl-jobs.json")}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("derived controller config: %w", err)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(c.cfg.Dir, "inactl.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	c.API = apiAddr
	c.argv[controller] = []string{filepath.Join(c.cfg.Bin, "inactl"), "run", "--config", path}
	if err := c.StartController(ctx); err != nil {
		return err
	}
	p := c.proc[controller]
	// Ready when every switch has the pipeline and the routes.
	cl := api.NewClient(apiAddr, "")
	for {
		sts, err := cl.Status(ctx)
		ready := err == nil && len(sts) == len(c.Topo.Switches)
		for _, s := range sts {
			ready = ready && s.Connected && s.PipelinePushes > 0 && s.Reconciles > 0
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the controller did not get the switches ready: %v (status %+v, err %v)", ctx.Err(), sts, err)
		case <-p.Done():
			return p.Exited()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WriteHosts writes the scheduler's hosts file.
func (c *Cluster) WriteHosts(path string) error {
	b, err := json.MarshalIndent(c.Hosts, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Close stops the switches and the controller and removes the namespaces and links it made.
func (c *Cluster) Close() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(3 * time.Second)
	}
	c.procs = nil
	// Deleting one end of a veth pair deletes both at once; a namespace's links would go only
	// when the kernel gets round to destroying it.
	for _, l := range append(slices.Clone(c.links), slices.Collect(maps.Values(c.hostLink))...) {
		_ = exec.Command("ip", "link", "del", l).Run()
	}
	for _, ns := range c.hostNS {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	c.links, c.hostNS = nil, nil
}

// Dir is where the cluster's configs and logs are.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// SwitchLog is the path of a switch's log.
func (c *Cluster) SwitchLog(name string) string {
	return filepath.Join(c.cfg.Dir, "switch-"+name+".log")
}
