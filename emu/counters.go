package emu

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/inapack/inapack/internal/schedstat"
)

// SwitchCounters is what a switch's ports lost and did, summed over its ports: the reference
// switch's own counters (GET /stats) and its process's CPU time and
// run-queue wait (schedstat).
type SwitchCounters struct {
	RxPackets, TxPackets uint64
	// TailDrops are frames dropped at a full egress queue; KernelDrops frames the kernel dropped
	// because a port's receive ring was full (the switch did not read fast enough).
	TailDrops, KernelDrops uint64
	// CPUSec is the process's time on a CPU, RunQueueSec its time runnable but waiting for one.
	CPUSec, RunQueueSec float64
}

// Sub is c - o, counter by counter (o an earlier snapshot).
func (c SwitchCounters) Sub(o SwitchCounters) SwitchCounters {
	return SwitchCounters{RxPackets: c.RxPackets - o.RxPackets, TxPackets: c.TxPackets - o.TxPackets,
		TailDrops: c.TailDrops - o.TailDrops, KernelDrops: c.KernelDrops - o.KernelDrops,
		CPUSec: c.CPUSec - o.CPUSec, RunQueueSec: c.RunQueueSec - o.RunQueueSec}
}

// Counters snapshots every switch's counters. BMv2 serves no port counters: its entries have only
// the CPU figures.
func (c *Cluster) Counters(ctx context.Context) (map[string]SwitchCounters, error) {
	out := map[string]SwitchCounters{}
	for name, pid := range c.pids {
		var sc SwitchCounters
		t, err := schedstat.Read(pid)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", name, err)
		}
		sc.CPUSec, sc.RunQueueSec = t.Run.Seconds(), t.Wait.Seconds()
		if addr, ok := c.stats[name]; ok {
			if err := portCounters(ctx, addr, &sc); err != nil {
				return nil, fmt.Errorf("switch %s: %w", name, err)
			}
		}
		out[name] = sc
	}
	return out, nil
}

func portCounters(ctx context.Context, addr string, sc *SwitchCounters) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/stats", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /stats: %s", resp.Status)
	}
	var st struct {
		Ports []struct {
			RxPackets   uint64 `json:"rx_packets"`
			TxPackets   uint64 `json:"tx_packets"`
			TailDrops   uint64 `json:"tail_drops"`
			KernelDrops uint64 `json:"kernel_drops"`
		} `json:"ports"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return fmt.Errorf("GET /stats: %w", err)
	}
	for _, p := range st.Ports {
		sc.RxPackets += p.RxPackets
		sc.TxPackets += p.TxPackets
		sc.TailDrops += p.TailDrops
		sc.KernelDrops += p.KernelDrops
	}
	return nil
}
