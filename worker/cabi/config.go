//go:build cgo

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// defaultWindow is the job's slots when the config gives none: ina-worker's default.
const defaultWindow = 16

// config is what inapack_open takes, as JSON. Field names follow the Python package's arguments.
type config struct {
	Job      int    `json:"job"`
	Rank     int    `json:"rank"`
	Workers  int    `json:"world_size"`
	Priority int    `json:"priority"`
	Member   int    `json:"member"` // index among the job's workers behind this host's switch port
	SlotBase int    `json:"slot_base"`
	Window   int    `json:"window"`
	Iface    string `json:"iface"`  // AF_PACKET interface (needs CAP_NET_RAW)
	Netns    string `json:"netns"`  // the network namespace of Iface, if not this process's
	IP       string `json:"ip"`     // this worker's IPv4 address
	PSIP     string `json:"ps_ip"`  // the job's PS
	PSMAC    string `json:"ps_mac"` // destination MAC of data frames (the switch forwards by table)
	Fabric   int64  `json:"fabric"` // instead of Iface: an in-process PS from inapack_local_fabric
	// ProgressTimeout is in seconds (0: the worker's default, 5 s).
	ProgressTimeout float64 `json:"progress_timeout"`
	// Integrity carries and checks the integrity lane (absent: on); the job's PS and every
	// worker must agree.
	Integrity *bool `json:"integrity"`
	// Threads runs the worker on that many threads (worker.Group, each with its own socket; a
	// power of two dividing the window); 0: worker.AutoThreads.
	Threads int `json:"threads"`
}

func decodeConfig(s string, c *config) error {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.DisallowUnknownFields()
	if err := d.Decode(c); err != nil {
		return fmt.Errorf("%w: config %q: %v", errConfig, s, err)
	}
	return nil
}

// open makes the transports and the worker, and returns what closes them.
func (c *config) open() (allReducer, func() error, error) {
	switch {
	case c.Job < 1 || c.Job > 0xffff || c.Priority < 0 || c.Priority > 255 || c.SlotBase < 0 || c.SlotBase > 0xffff ||
		c.Member < 0 || c.Member > 255:
		return nil, nil, fmt.Errorf("%w: job %d, priority %d, slot_base %d, member %d out of range", errConfig, c.Job, c.Priority, c.SlotBase, c.Member)
	case (c.Iface == "") == (c.Fabric == 0):
		return nil, nil, fmt.Errorf("%w: give exactly one of iface (an interface) or fabric (an in-process PS)", errConfig)
	case c.Netns != "" && c.Iface == "":
		return nil, nil, fmt.Errorf("%w: netns %q without iface", errConfig, c.Netns)
	case c.ProgressTimeout < 0:
		return nil, nil, fmt.Errorf("%w: progress_timeout %v is negative", errConfig, c.ProgressTimeout)
	}
	wc := worker.Config{Job: uint16(c.Job), Rank: c.Rank, Workers: c.Workers, Priority: uint8(c.Priority), Member: uint8(c.Member),
		SlotBase: uint16(c.SlotBase), Window: c.Window, ProgressTimeout: time.Duration(c.ProgressTimeout * float64(time.Second)),
		NoIntegrity: c.Integrity != nil && !*c.Integrity}
	if wc.Window == 0 {
		wc.Window = defaultWindow
	}
	n := c.Threads
	if n == 0 {
		n = worker.AutoThreads(wc.Window)
	}
	if n < 1 || n > worker.MaxThreads || n&(n-1) != 0 || wc.Window%n != 0 {
		return nil, nil, fmt.Errorf("%w: threads %d: want a power of two up to %d dividing the window %d", errConfig, c.Threads, worker.MaxThreads, wc.Window)
	}
	var ts []transport.Transport
	closeAll := func() error {
		var first error
		for _, t := range ts {
			if err := t.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	if c.Fabric != 0 {
		f, err := fabricByID(c.Fabric)
		if err != nil {
			return nil, nil, err
		}
		ms, err := f.attach(c.Rank, c.Job, c.Workers, wc.Window, !wc.NoIntegrity, n)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range ms {
			ts = append(ts, m)
		}
		wc.SrcMAC, wc.DstMAC = net.HardwareAddr{2, 0, 0, 0, 1, byte(c.Rank)}, fabricMAC
		wc.SrcIP, wc.DstIP = net.IPv4(10, 0, 1, byte(c.Rank+1)), fabricIP
	} else {
		ip, psIP := net.ParseIP(c.IP).To4(), net.ParseIP(c.PSIP).To4()
		if ip == nil || psIP == nil {
			return nil, nil, fmt.Errorf("%w: ip %q and ps_ip %q must be IPv4 addresses", errConfig, c.IP, c.PSIP)
		}
		psMAC := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if c.PSMAC != "" {
			var err error
			if psMAC, err = net.ParseMAC(c.PSMAC); err != nil {
				return nil, nil, fmt.Errorf("%w: ps_mac: %v", errConfig, err)
			}
		}
		// Only this job's INA frames, and of those only the thread's own chunks (LaneFilter).
		err := inNetns(c.Netns, func() error {
			for k := range n {
				p, err := transport.OpenPacketConfig(c.Iface, transport.PacketConfig{Jobs: []uint16{wc.Job}, Lane: k, Lanes: n})
				if err != nil {
					return err
				}
				ts = append(ts, p)
			}
			return nil
		})
		if err != nil {
			_ = closeAll()
			return nil, nil, err
		}
		wc.SrcMAC, wc.DstMAC, wc.SrcIP, wc.DstIP = ts[0].(*transport.Packet).MAC(), psMAC, ip, psIP
	}
	if n == 1 {
		w, err := worker.New(wc, ts[0])
		if err != nil {
			_ = closeAll()
			return nil, nil, err
		}
		return w, closeAll, nil
	}
	g, err := worker.NewGroup(wc, ts)
	if err != nil {
		_ = closeAll()
		return nil, nil, err
	}
	return g, func() error { g.Close(); return closeAll() }, nil
}
