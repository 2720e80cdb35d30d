package topology

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"

	"github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/p4src/wire"
)

// Derive builds the controller config for the topology: IPv4 routes to every host on every switch,
// and for every job, on every switch its traffic crosses, the ina_ps entry (the port towards the PS),
// the local members with their worker bits (rank in the job's worker list) and member indices (a
// host listed several times has a worker per listing behind its one port), transit ports, and the
// result entry with a multicast group (id = job id) towards every port that leads to a worker and,
// for each worker behind another switch below, the port of the branch toward it (ina_unicast).
// endpoints says how to reach each switch.
func (t *Topology) Derive(endpoints map[string]Endpoint) (*controlplane.Config, error) {
	g, err := t.graph()
	if err != nil {
		return nil, err
	}
	cfg := &controlplane.Config{}
	for _, name := range slices.Sorted(maps.Keys(t.Switches)) {
		ep, ok := endpoints[name]
		if !ok {
			return nil, fmt.Errorf("no endpoint for switch %s", name)
		}
		sc := controlplane.SwitchConfig{
			Name: name, Address: ep.Address, DeviceID: t.Switches[name].DeviceID, Target: ep.Target,
			DeviceConfig: ep.DeviceConfig, ThriftAddress: ep.ThriftAddress, Settings: t.INA.Settings,
		}
		if sc.DeviceID == 0 {
			sc.DeviceID = 1
		}
		cfg.Switches = append(cfg.Switches, sc)
	}
	// Routes: every switch reaches every host along the host's shortest-path tree.
	for _, host := range slices.Sorted(maps.Keys(t.Hosts)) {
		tr := g.bfs(host)
		p := netip.MustParsePrefix(t.Hosts[host].IP)
		for i := range cfg.Switches {
			sw := cfg.Switches[i].Name
			port, ok := tr.up[sw]
			if !ok {
				continue // not connected to this host
			}
			cfg.Switches[i].Routes = append(cfg.Switches[i].Routes, controlplane.Route{
				Prefix: netip.PrefixFrom(p.Addr(), 32).String(), Port: port, MAC: t.Hosts[host].MAC,
			})
		}
	}
	for _, j := range t.INA.Jobs {
		jc, err := t.deriveJob(g, j)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		cfg.Jobs = append(cfg.Jobs, *jc)
	}
	return cfg, nil
}

// DeriveJob builds one job's entries on every switch its traffic crosses, as Derive does for the
// jobs of the ina section; the cluster layer uses it for jobs it places. j.ID is also the job's
// multicast group id.
func (t *Topology) DeriveJob(j Job) (*controlplane.JobConfig, error) {
	g, err := t.graph()
	if err != nil {
		return nil, err
	}
	jc, err := t.deriveJob(g, j)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	return jc, nil
}

func (t *Topology) deriveJob(g graph, j Job) (*controlplane.JobConfig, error) {
	ps, ok := t.Hosts[j.PS]
	if !ok {
		return nil, fmt.Errorf("ps %q is not a host", j.PS)
	}
	if len(j.Workers) == 0 {
		return nil, fmt.Errorf("no workers")
	}
	psAddr := netip.MustParsePrefix(ps.IP).Addr().String()
	tr := g.bfs(j.PS)
	parts := map[string]*controlplane.JobSwitch{}
	part := func(sw string) *controlplane.JobSwitch {
		if p, ok := parts[sw]; ok {
			return p
		}
		p := &controlplane.JobSwitch{Switch: sw, PS: controlplane.PSConfig{Port: tr.up[sw], MAC: ps.MAC, IP: psAddr}}
		parts[sw] = p
		return p
	}
	// down[sw] collects the ports a result leaves sw by: towards members and towards lower switches.
	down := map[string]map[int]bool{}
	addDown := func(sw string, port int) {
		if down[sw] == nil {
			down[sw] = map[int]bool{}
		}
		down[sw][port] = true
	}
	members := MemberIndices(j.Workers)
	unicast := map[string][]controlplane.UnicastPort{} // switch -> the branch toward each worker below it
	for rank, w := range j.Workers {
		if _, ok := t.Hosts[w]; !ok {
			return nil, fmt.Errorf("worker %q is not a host", w)
		}
		if members[rank] >= wire.MaxMembers {
			return nil, fmt.Errorf("worker %q listed more than %d times (the member index has 4 bits)", w, wire.MaxMembers)
		}
		if w == j.PS {
			return nil, fmt.Errorf("host %q is both PS and worker", w)
		}
		tor, ok := tr.parent[w]
		if !ok {
			return nil, fmt.Errorf("worker %q cannot reach the PS %q", w, j.PS)
		}
		if _, isSwitch := t.Switches[tor]; !isSwitch {
			return nil, fmt.Errorf("worker %q is linked to a host, not a switch", w)
		}
		port := portTowards(g, tor, w)
		p := part(tor)
		p.Members = append(p.Members, controlplane.Member{Port: port, Member: members[rank], WorkerBit: rank})
		// Every switch above the ToR sees the partial arrive from its child: a transit port. The
		// same port is the result's branch toward each worker below it (its ina_unicast entry).
		child, sw := tor, tr.parent[tor]
		for sw != j.PS {
			in := portTowards(g, sw, child)
			up := part(sw)
			unicast[sw] = append(unicast[sw], controlplane.UnicastPort{WorkerBit: rank, Port: in})
			if members[rank] == 0 { // the host's first worker adds the port
				if !slices.Contains(up.TransitPorts, in) && !hasMember(up, in) {
					up.TransitPorts = append(up.TransitPorts, in)
				}
				addDown(sw, in)
			}
			child, sw = sw, tr.parent[sw]
		}
		if members[rank] == 0 {
			addDown(tor, port)
		}
	}
	jc := &controlplane.JobConfig{ID: j.ID, PriorityCap: j.PriorityCap, INA: j.INA}
	for _, sw := range slices.Sorted(maps.Keys(parts)) {
		p := parts[sw]
		ports := slices.Sorted(maps.Keys(down[sw]))
		p.Result = &controlplane.ResultConfig{Port: tr.up[sw], MulticastGroup: j.ID, Ports: ports, Unicast: unicast[sw]}
		sort.Ints(p.TransitPorts)
		jc.Switches = append(jc.Switches, *p)
	}
	return jc, nil
}

// MemberIndices gives each rank of a job's worker list its member index: a host listed k times
// runs k workers of the job behind one switch port, numbered 0..k-1 in rank order (the INA
// header's member field, an agent's --member).
func MemberIndices(workers []string) []int {
	out := make([]int, len(workers))
	n := map[string]int{}
	for i, w := range workers {
		out[i] = n[w]
		n[w]++
	}
	return out
}

// portTowards is sw's port on the link to neighbour n.
func portTowards(g graph, sw, n string) int {
	for _, h := range g[sw] {
		if h.to == n {
			return h.port
		}
	}
	return -1
}

func hasMember(p *controlplane.JobSwitch, port int) bool {
	return slices.ContainsFunc(p.Members, func(m controlplane.Member) bool { return m.Port == port })
}
