package refswitch

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync/atomic"

	"github.com/inapack/inapack/internal/afring"
)

// portCounters are the switch's own counters for one port (the model counts INA events).
type portCounters struct {
	RxPackets, RxBytes, RxErrors   atomic.Uint64
	TxPackets, TxBytes, TxErrors   atomic.Uint64
	TailDrops                      atomic.Uint64 // egress queue full
	FaultLost, FaultDuplicated     atomic.Uint64
	FaultReordered, FaultCorrupted atomic.Uint64
}

// PortStats is a snapshot of one port's counters.
type PortStats struct {
	Port            uint16 `json:"port"`
	Interface       string `json:"interface"`
	RxPackets       uint64 `json:"rx_packets"`
	RxBytes         uint64 `json:"rx_bytes"`
	RxErrors        uint64 `json:"rx_errors"`
	TxPackets       uint64 `json:"tx_packets"`
	TxBytes         uint64 `json:"tx_bytes"`
	TxErrors        uint64 `json:"tx_errors"`
	TailDrops       uint64 `json:"tail_drops"`
	QueueDepth      int    `json:"queue_depth"`
	FaultLost       uint64 `json:"fault_lost"`
	FaultDuplicated uint64 `json:"fault_duplicated"`
	FaultReordered  uint64 `json:"fault_reordered"`
	// FaultCorrupted counts INA frames sent with one value bit flipped (--corrupt).
	FaultCorrupted uint64 `json:"fault_corrupted"`
	// KernelDrops counts frames the kernel dropped because the port's receive ring was full
	// (PACKET_STATISTICS); RxTruncated frames larger than a ring slot; VLANTagged frames whose
	// 802.1Q tag the kernel had stripped and the port put back (the model then drops them as
	// non-IPv4, as BMv2 does).
	KernelDrops uint64 `json:"kernel_drops"`
	RxTruncated uint64 `json:"rx_truncated"`
	VLANTagged  uint64 `json:"vlan_tagged"`
}

// Stats is a snapshot of the switch's own counters.
type Stats struct {
	Configured bool `json:"pipeline_configured"`
	// NoPipelineDrops counts packets received before any pipeline was pushed (BMv2 drops them too).
	NoPipelineDrops uint64 `json:"no_pipeline_drops"`
	// NoPortDrops counts packets the model sent to a port number no interface is attached to.
	NoPortDrops uint64      `json:"no_port_drops"`
	Ports       []PortStats `json:"ports"`
}

type switchCounters struct {
	noPipeline, noPort atomic.Uint64
}

func (d *dataplane) stats() Stats {
	s := Stats{Configured: d.configured.Load(), NoPipelineDrops: d.counters.noPipeline.Load(), NoPortDrops: d.counters.noPort.Load()}
	for _, p := range d.ports {
		c := &p.st
		var ks afring.Stats
		if p.sock != nil { // nil only in tests without sockets
			ks = p.sock.Stats()
		}
		s.Ports = append(s.Ports, PortStats{
			KernelDrops: ks.KernelDrops, RxTruncated: ks.Truncated, VLANTagged: ks.VLAN,
			Port: p.num, Interface: p.ifname,
			RxPackets: c.RxPackets.Load(), RxBytes: c.RxBytes.Load(), RxErrors: c.RxErrors.Load(),
			TxPackets: c.TxPackets.Load(), TxBytes: c.TxBytes.Load(), TxErrors: c.TxErrors.Load(),
			TailDrops: c.TailDrops.Load(), QueueDepth: int(p.q.depth.Load()),
			FaultLost: c.FaultLost.Load(), FaultDuplicated: c.FaultDuplicated.Load(), FaultReordered: c.FaultReordered.Load(),
			FaultCorrupted: c.FaultCorrupted.Load(),
		})
	}
	sort.Slice(s.Ports, func(i, j int) bool { return s.Ports[i].Port < s.Ports[j].Port })
	return s
}

// statsHandler serves the counters as JSON at /stats.
func (d *dataplane) statsHandler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(d.stats())
	})
	return mux
}
