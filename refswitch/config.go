package refswitch

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/inapack/inapack/p4src/model"
)

// PortSpec attaches switch port Port to a Linux interface, written N@ifname as in BMv2's -i.
type PortSpec struct {
	Port   uint16
	Ifname string
}

// Config is the reference switch's configuration; cmd/refswitch fills it from flags.
type Config struct {
	Ports    []PortSpec
	GRPCAddr string // default DefaultGRPCAddr
	DeviceID uint64 // default 1
	// TLSCert and TLSKey serve gRPC over TLS. A non-loopback GRPCAddr needs them, or Insecure.
	TLSCert, TLSKey string
	Insecure        bool
	// Token, when set, is the bearer token every RPC must carry ("authorization: Bearer <token>").
	Token     string
	Faults    FaultConfig
	Rates     map[uint16]float64 // per-port egress rate limit, Mbit/s
	QueueLen  int                // egress queue bound in packets; default DefaultQueueLen
	Ring      RingConfig         // AF_PACKET ring sizes per port
	StatsAddr string             // loopback HTTP address serving GET /stats; empty: none
	// FaultAPI serves GET and PUT /faults on StatsAddr: the fault rates change while running
	// (chaos runs); off by default, since anyone reaching the address could then drop traffic.
	FaultAPI bool
	Logger   *slog.Logger
	// Switch is the model to serve; nil makes a new one.
	Switch *model.Switch
	// Ready, if set, is called with the bound gRPC and stats addresses once serving.
	Ready func(grpcAddr, statsAddr string)
}

// Defaults. The gRPC address is simple_switch_grpc's. The egress queue is deeper than BMv2's 64
// packets: a job's window of results (64 chunks) plus the PS's answers to RESENDs overflowed 64 on
// a worker port (58 to 427 tail drops per 4-worker, 1 MiB run, each a 10 ms timeout), never 256;
// with ECN marking, rate-limited runs kept their queues short either way (README.md).
const (
	DefaultGRPCAddr = "127.0.0.1:9559"
	DefaultQueueLen = 256
)

// RingConfig sizes each port's AF_PACKET rings, in 16 KiB slots (zero: 512 receive, 128
// transmit, 10 MiB a port). The writer flushes every batch, so the transmit ring only has to hold
// one; the receive ring absorbs what arrives while the reader is descheduled (the kernel's drops
// are counted in kernel_drops).
type RingConfig struct {
	RXFrames, TXFrames int
}

// ParsePort parses N@ifname.
func ParsePort(s string) (PortSpec, error) {
	n, name, ok := strings.Cut(s, "@")
	if !ok || name == "" {
		return PortSpec{}, fmt.Errorf("port %q: want N@ifname", s)
	}
	p, err := parsePortNum(n)
	if err != nil {
		return PortSpec{}, fmt.Errorf("port %q: %w", s, err)
	}
	return PortSpec{Port: p, Ifname: name}, nil
}

// ParseRate parses N@mbps, a port's egress rate in Mbit/s.
func ParseRate(s string) (uint16, float64, error) {
	n, r, ok := strings.Cut(s, "@")
	if !ok {
		return 0, 0, fmt.Errorf("rate %q: want N@mbps", s)
	}
	p, err := parsePortNum(n)
	if err != nil {
		return 0, 0, fmt.Errorf("rate %q: %w", s, err)
	}
	mbps, err := strconv.ParseFloat(r, 64)
	if err != nil || !(mbps > 0) || mbps > 1e6 {
		return 0, 0, fmt.Errorf("rate %q: Mbit/s must be a number in (0, 1e6]", s)
	}
	return p, mbps, nil
}

func parsePortNum(s string) (uint16, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("port number %q is not an integer", s)
	}
	if n < 0 || n > maxPort {
		return 0, fmt.Errorf("port number %d outside 0..%d", n, maxPort)
	}
	return uint16(n), nil
}

// withDefaults fills unset fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.GRPCAddr == "" {
		c.GRPCAddr = DefaultGRPCAddr
	}
	if c.DeviceID == 0 {
		c.DeviceID = 1
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.QueueLen < 1 {
		return c, fmt.Errorf("egress queue length %d < 1", c.QueueLen)
	}
	nums, names := map[uint16]string{}, map[string]uint16{}
	for _, p := range c.Ports {
		if p.Port > maxPort {
			return c, fmt.Errorf("port number %d outside 0..%d", p.Port, maxPort)
		}
		if prev, ok := nums[p.Port]; ok {
			return c, fmt.Errorf("port %d given twice (%s and %s)", p.Port, prev, p.Ifname)
		}
		if prev, ok := names[p.Ifname]; ok {
			return c, fmt.Errorf("interface %s given twice (ports %d and %d)", p.Ifname, prev, p.Port)
		}
		nums[p.Port], names[p.Ifname] = p.Ifname, p.Port
	}
	for p := range c.Rates {
		if _, ok := nums[p]; !ok {
			return c, fmt.Errorf("rate limit for port %d, which has no interface", p)
		}
	}
	if err := c.Faults.validate(); err != nil {
		return c, err
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, fmt.Errorf("TLS needs both a certificate and a key")
	}
	loop, err := isLoopback(c.GRPCAddr)
	if err != nil {
		return c, fmt.Errorf("gRPC address: %w", err)
	}
	if !loop && c.TLSCert == "" && !c.Insecure {
		return c, fmt.Errorf("gRPC address %s is not loopback: give --tls-cert and --tls-key, or --insecure to serve it in clear", c.GRPCAddr)
	}
	if c.StatsAddr != "" {
		loop, err := isLoopback(c.StatsAddr)
		if err != nil {
			return c, fmt.Errorf("stats address: %w", err)
		}
		if !loop {
			return c, fmt.Errorf("stats address %s must be a loopback address", c.StatsAddr)
		}
	}
	if c.FaultAPI && c.StatsAddr == "" {
		return c, fmt.Errorf("the fault API is served on the stats address: give one")
	}
	return c, nil
}

// isLoopback reports whether host:port binds only loopback ("localhost" counts; "" and 0.0.0.0 do not).
func isLoopback(hostport string) (bool, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // a name other than localhost may resolve anywhere
	}
	return a.IsLoopback(), nil
}
