package scheduler

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/controlplane/topology"
)

func loadTopo(t testing.TB, name string) *topology.Topology {
	t.Helper()
	topo, err := topology.Load(filepath.Join("..", "bmv2", "topologies", name, "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestClusterFromTwoRacks(t *testing.T) {
	c, err := NewCluster(loadTopo(t, "two-racks"), ClusterParams{RTT: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Model
	if len(m.Racks) != 2 || m.Racks[0].Name != "tor1" || m.Racks[1].Name != "tor2" {
		t.Fatalf("racks = %+v, want tor1 and tor2 (the spine has no hosts)", m.Racks)
	}
	if got := strings.Join(c.Hosts, ","); got != "h1,h2,h3,h4,ps1" {
		t.Errorf("machines = %s", got)
	}
	if m.TotalGPUs() != 10 || m.Machines[4].Rack != 1 || c.ToR[4] != "tor2" {
		t.Errorf("GPUs %d, ps1 in rack %d on %s", m.TotalGPUs(), m.Machines[4].Rack, c.ToR[4])
	}
	// Host links are 40 Mbit/s, each ToR's link to the spine 20 Mbit/s; the core is every uplink.
	if m.Machines[0].NICGbps != 0.04 || m.Racks[0].UplinkGbps != 0.02 || m.CoreGbps != 0.04 {
		t.Errorf("nic %v, uplink %v, core %v Gbps", m.Machines[0].NICGbps, m.Racks[0].UplinkGbps, m.CoreGbps)
	}
	if c.ActiveSlots != 64 || m.Racks[0].INAMemoryBytes != 64*256 || m.Racks[0].RTTSec != 0.002 {
		t.Errorf("slots %d, memory %v, rtt %v", c.ActiveSlots, m.Racks[0].INAMemoryBytes, m.Racks[0].RTTSec)
	}
	if id, ok := c.Machine("h3"); !ok || id != 2 {
		t.Errorf("Machine(h3) = %d, %v", id, ok)
	}
}

func TestClusterDefaults(t *testing.T) {
	// one-rack has no rates and no GPU counts: without GPUs nothing can be placed.
	topo := loadTopo(t, "one-rack")
	if _, err := NewCluster(topo, ClusterParams{}); err == nil || !strings.Contains(err.Error(), "gpus") {
		t.Fatalf("no GPUs: err = %v", err)
	}
	for name, h := range topo.Hosts {
		h.GPUs = 1
		topo.Hosts[name] = h
	}
	c, err := NewCluster(topo, ClusterParams{DefaultMbps: 100})
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Machines[0].NICGbps != 0.1 || c.Model.Racks[0].RTTSec != 0.001 || c.ActiveSlots != 1024 {
		t.Errorf("defaults: nic %v, rtt %v, slots %d", c.Model.Machines[0].NICGbps, c.Model.Racks[0].RTTSec, c.ActiveSlots)
	}
}

func TestLinkRatesParsed(t *testing.T) {
	var l []topology.Link
	if err := json.Unmarshal([]byte(`[["h1","s1-p1"],["h2","s1-p2","2ms",25],["s1-p3","s2-p1",5,1000.5]]`), &l); err != nil {
		t.Fatal(err)
	}
	if l[0].Mbps != 0 || l[1].Latency != "2ms" || l[1].Mbps != 25 || l[2].Latency != "5ms" || l[2].Mbps != 1000.5 {
		t.Errorf("links = %+v", l)
	}
	b, _ := json.Marshal(l)
	if string(b) != `[["h1","s1-p1"],["h2","s1-p2","2ms",25],["s1-p3","s2-p1","5ms",1000.5]]` {
		t.Errorf("marshalled: %s", b)
	}
	for _, bad := range []string{`["h1","s1-p1","0ms",-1]`, `["h1","s1-p1","0ms","fast"]`, `["h1","s1-p1","0ms",1,2]`} {
		var x topology.Link
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
