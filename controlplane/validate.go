package controlplane

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/inapack/inapack/p4src/wire"
)

// Limits from the P4 program's field widths (docs/protocol.md).
const (
	maxPort      = 511             // bit<9>
	maxFanIn     = wire.MaxWorkers // one member per worker bit (the field is bit<8>)
	maxPriority  = 255
	maxMcastID   = 0xFFFF
	maxJobID     = wire.MaxJobs - 1
	maxWorkerBit = wire.MaxWorkers - 1
)

// ConfigError is one problem in a config, located by line and field path.
type ConfigError struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e ConfigError) Error() string {
	if e.Line == 0 { // built in code or received through the API: no source line
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Path, e.Msg)
}

// ValidationError lists every problem found in a config.
type ValidationError []ConfigError

func (v ValidationError) Error() string {
	parts := make([]string, len(v))
	for i, e := range v {
		parts[i] = e.Error()
	}
	return fmt.Sprintf("invalid config (%d problems):\n  %s", len(v), strings.Join(parts, "\n  "))
}

type validator struct {
	file string
	errs ValidationError
}

func (v *validator) add(p Pos, field, path, format string, args ...any) {
	v.errs = append(v.errs, ConfigError{File: v.file, Line: p.At(field), Path: joinPath(path, field), Msg: fmt.Sprintf(format, args...)})
}

// Validate checks the whole config; nothing is written to a switch unless it passes.
func (c *Config) Validate() error {
	v := &validator{file: c.file}
	if v.file == "" {
		v.file = "config"
	}
	c.validateController(v)
	names := map[string]int{}
	endpoints := map[string]int{}
	for i := range c.Switches {
		s := &c.Switches[i]
		path := fmt.Sprintf("switches[%d]", i)
		if s.Name == "" {
			v.add(s.Pos, "name", path, "missing")
		} else if l, dup := names[s.Name]; dup {
			v.add(s.Pos, "name", path, "switch %q already defined at line %d", s.Name, l)
		} else {
			names[s.Name] = s.Pos.At("name")
		}
		if s.Address == "" {
			v.add(s.Pos, "address", path, "missing")
		} else {
			ep := fmt.Sprintf("%s/%d", s.Address, s.DeviceID)
			if l, dup := endpoints[ep]; dup {
				v.add(s.Pos, "address", path, "address %s with device_id %d already used at line %d", s.Address, s.DeviceID, l)
			}
			endpoints[ep] = s.Pos.At("address")
		}
		validateSwitch(v, s, path)
	}
	jobs := map[int]int{}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		path := fmt.Sprintf("jobs[%d]", i)
		if l, dup := jobs[j.ID]; dup {
			v.add(j.Pos, "id", path, "job %d already defined at line %d", j.ID, l)
		}
		jobs[j.ID] = j.Pos.At("id")
		validateJob(v, c, j, path)
	}
	c.validateGroups(v)
	if len(v.errs) > 0 {
		return v.errs
	}
	return nil
}

func (c *Config) validateController(v *validator) {
	cc := &c.Controller
	if cc.BatchSize < 0 {
		v.add(cc.Pos, "batch_size", "controller", "must be >= 0 (0: default %d)", DefaultBatchSize)
	}
	for _, d := range []struct {
		field string
		d     Duration
	}{{"poll_interval", cc.PollInterval}, {"reconcile_interval", cc.ReconcileEvery}, {"dial_timeout", cc.DialTimeout}, {"max_backoff", cc.MaxBackoff}} {
		if d.d < 0 {
			v.add(cc.Pos, d.field, "controller", "must not be negative")
		}
	}
	if cc.TLS != nil && (cc.TLS.Cert == "" || cc.TLS.Key == "") {
		v.add(cc.TLS.Pos, "cert", "controller.tls", "the API server needs both cert and key")
	}
	for _, a := range [][2]string{{"api_address", cc.APIAddress}, {"metrics_address", cc.MetricsAddress}} {
		if a[1] == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a[1]); err != nil {
			v.add(cc.Pos, a[0], "controller", "%v", err)
		}
	}
}

func validateSwitch(v *validator, s *SwitchConfig, path string) {
	switch s.Target {
	case TargetBMv2, TargetRef, TargetTofino:
	case "":
		v.add(s.Pos, "target", path, "missing (bmv2, ref or tofino)")
	default:
		v.add(s.Pos, "target", path, "unknown target %q (bmv2, ref or tofino)", s.Target)
	}
	if s.Target == TargetTofino && s.DeviceConfig == "" && s.Tofino == nil {
		v.add(s.Pos, "tofino", path, "a tofino switch needs device_config or a tofino block")
	}
	if s.Tofino != nil {
		tp := joinPath(path, "tofino")
		if s.Target != TargetTofino {
			v.add(s.Pos, "tofino", path, "only for target tofino")
		}
		if s.DeviceConfig != "" {
			v.add(s.Pos, "device_config", path, "give device_config or a tofino block, not both")
		}
		if s.Tofino.Form != "" && s.Tofino.Form != "stratum" && s.Tofino.Form != "pi" {
			v.add(s.Tofino.Pos, "form", tp, "unknown form %q (stratum or pi)", s.Tofino.Form)
		}
		switch tf := s.Tofino; {
		case tf.Dir != "":
			if tf.PipelineName != "" || tf.Binary != "" || tf.ContextJSON != "" || tf.BfrtJSON != "" {
				v.add(tf.Pos, "dir", tp, "give dir (bf-p4c's output directory) or the files, not both")
			}
		default:
			if tf.Binary == "" {
				v.add(tf.Pos, "binary", tp, "missing (tofino.bin), or give dir")
			}
			if tf.ContextJSON == "" {
				v.add(tf.Pos, "context_json", tp, "missing, or give dir")
			}
			if tf.Form != "pi" && tf.BfrtJSON == "" {
				v.add(tf.Pos, "bfrt_json", tp, "missing (needed by the stratum form), or give dir")
			}
		}
	}
	if s.ThriftAddress != "" {
		if _, _, err := net.SplitHostPort(s.ThriftAddress); err != nil {
			v.add(s.Pos, "thrift_address", path, "%v", err)
		}
	}
	if s.TokenFile != "" && s.TLS == nil && s.Address != "" && !isLocalTarget(s.Address) {
		v.add(s.Pos, "token_file", path, "the token would cross the network in clear to %s: add a tls block", s.Address)
	}
	if s.TLS != nil && (s.TLS.Cert == "") != (s.TLS.Key == "") {
		v.add(s.TLS.Pos, "cert", joinPath(path, "tls"), "cert and key go together")
	}
	if st := s.Settings; st != nil {
		sp := joinPath(path, "settings")
		if st.Release != "" && st.Release != "esa" && st.Release != "atp" {
			v.add(st.Pos, "release", sp, "unknown release mode %q (esa or atp)", st.Release)
		}
		if st.ECNThreshold != nil && (*st.ECNThreshold < 0 || *st.ECNThreshold > wire.MaxECNThreshold) {
			v.add(st.Pos, "ecn_threshold", sp, "%d out of 0..%d", *st.ECNThreshold, wire.MaxECNThreshold)
		}
		if st.ActiveSlots != nil && (*st.ActiveSlots < 1 || *st.ActiveSlots > wire.NumSlots) {
			v.add(st.Pos, "active_slots", sp, "%d out of 1..%d", *st.ActiveSlots, wire.NumSlots)
		}
	}
	prefixes := map[netip.Prefix]int{}
	for i := range s.Routes {
		r := &s.Routes[i]
		rp := fmt.Sprintf("%s.routes[%d]", path, i)
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil || !p.Addr().Is4() {
			v.add(r.Pos, "prefix", rp, "%q is not an IPv4 prefix (a.b.c.d/len)", r.Prefix)
		} else {
			p = p.Masked()
			if l, dup := prefixes[p]; dup {
				v.add(r.Pos, "prefix", rp, "prefix %s already routed at line %d", p, l)
			}
			prefixes[p] = r.Pos.At("prefix")
		}
		checkPort(v, r.Pos, "port", rp, r.Port)
		checkMAC(v, r.Pos, "mac", rp, r.MAC)
	}
	for i := range s.MulticastGroups {
		g := &s.MulticastGroups[i]
		checkGroup(v, g.Pos, fmt.Sprintf("%s.multicast_groups[%d]", path, i), "id", g.ID, g.Ports)
	}
}

func validateJob(v *validator, c *Config, j *JobConfig, path string) {
	if j.ID < 1 || j.ID > maxJobID {
		v.add(j.Pos, "id", path, "job id %d out of 1..%d", j.ID, maxJobID)
	}
	if len(j.Owner) > 63 || strings.ContainsFunc(j.Owner, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		v.add(j.Pos, "owner", path, "owner %q: want at most 63 printable ASCII characters, no spaces", j.Owner)
	}
	if j.PriorityCap != nil && (*j.PriorityCap < 0 || *j.PriorityCap > maxPriority) {
		v.add(j.Pos, "priority_cap", path, "%d out of 0..%d", *j.PriorityCap, maxPriority)
	}
	if len(j.Switches) == 0 {
		v.add(j.Pos, "switches", path, "a job needs at least one switch")
	}
	bits := map[int]string{}
	seen := map[string]int{}
	for i := range j.Switches {
		js := &j.Switches[i]
		sp := fmt.Sprintf("%s.switches[%d]", path, i)
		if c.Switch(js.Switch) == nil {
			v.add(js.Pos, "switch", sp, "unknown switch %q", js.Switch)
		}
		if l, dup := seen[js.Switch]; dup {
			v.add(js.Pos, "switch", sp, "switch %q already listed for this job at line %d", js.Switch, l)
		}
		seen[js.Switch] = js.Pos.At("switch")
		validateJobSwitch(v, js, sp, bits)
	}
	// A unicast entry names a worker of the job, a member on some switch.
	for i := range j.Switches {
		if r := j.Switches[i].Result; r != nil {
			for k := range r.Unicast {
				u := &r.Unicast[k]
				if _, ok := bits[u.WorkerBit]; !ok && u.WorkerBit >= 0 && u.WorkerBit <= maxWorkerBit {
					v.add(u.Pos, "worker_bit", fmt.Sprintf("%s.switches[%d].result.unicast[%d]", path, i, k), "worker bit %d is no member's of this job", u.WorkerBit)
				}
			}
		}
	}
}

func validateJobSwitch(v *validator, js *JobSwitch, sp string, bits map[int]string) {
	pp := joinPath(sp, "ps")
	if js.PS.MAC == "" && js.PS.IP == "" {
		v.add(js.Pos, "ps", sp, "missing (port, mac, ip of the path to the job's PS)")
	} else {
		checkPort(v, js.PS.Pos, "port", pp, js.PS.Port)
		checkMAC(v, js.PS.Pos, "mac", pp, js.PS.MAC)
		if a, err := netip.ParseAddr(js.PS.IP); err != nil || !a.Is4() {
			v.add(js.PS.Pos, "ip", pp, "%q is not an IPv4 address", js.PS.IP)
		}
	}
	ports := map[int]string{}      // port -> the first use, "role (line n)"
	roles := map[int]string{}      // port -> its role
	members := map[[2]int]string{} // (port, member) -> where
	usePort := func(p Pos, field, path string, port int, role string) {
		checkPort(v, p, field, path, port)
		// Several members may share a port (told apart by member index, checked below).
		if prev, dup := ports[port]; dup && (role != "member" || roles[port] != "member") {
			v.add(p, field, path, "port %d already used on this switch by %s (a (job, port) pair has one role)", port, prev)
			return
		} else if dup {
			return
		}
		ports[port], roles[port] = fmt.Sprintf("%s (line %d)", role, p.At(field)), role
	}
	for i := range js.Members {
		m := &js.Members[i]
		mp := fmt.Sprintf("%s.members[%d]", sp, i)
		usePort(m.Pos, "port", mp, m.Port, "member")
		if m.Member < 0 || m.Member >= wire.MaxMembers {
			v.add(m.Pos, "member", mp, "%d out of 0..%d", m.Member, wire.MaxMembers-1)
		} else if prev, dup := members[[2]int{m.Port, m.Member}]; dup {
			v.add(m.Pos, "member", mp, "port %d member %d already used by %s (each worker behind a port has its own member index)", m.Port, m.Member, prev)
		} else {
			members[[2]int{m.Port, m.Member}] = fmt.Sprintf("line %d", m.Pos.At("port"))
		}
		if m.WorkerBit < 0 || m.WorkerBit > maxWorkerBit {
			v.add(m.Pos, "worker_bit", mp, "%d out of 0..%d", m.WorkerBit, maxWorkerBit)
		} else if prev, dup := bits[m.WorkerBit]; dup {
			v.add(m.Pos, "worker_bit", mp, "worker bit %d already used by %s", m.WorkerBit, prev)
		} else {
			bits[m.WorkerBit] = fmt.Sprintf("line %d", m.Pos.At("worker_bit"))
		}
	}
	if js.FanIn != nil {
		switch fi := *js.FanIn; {
		case fi < 1 || fi > maxFanIn:
			v.add(js.Pos, "fan_in", sp, "%d out of 1..%d", fi, maxFanIn)
		case fi != len(js.Members):
			v.add(js.Pos, "fan_in", sp, "fan_in %d does not match the %d members on this switch", fi, len(js.Members))
		}
	}
	if len(js.Members) > maxFanIn {
		v.add(js.Pos, "members", sp, "%d members, at most %d per switch", len(js.Members), maxFanIn)
	}
	if r := js.Result; r != nil {
		rp := joinPath(sp, "result")
		usePort(r.Pos, "port", rp, r.Port, "result")
		checkGroup(v, r.Pos, rp, "multicast_group", r.MulticastGroup, r.ReplicaPorts(js))
		validateUnicast(v, js, rp)
	}
	for i, p := range js.TransitPorts {
		usePort(js.Pos, "transit_ports", fmt.Sprintf("%s.transit_ports[%d]", sp, i), p, "transit")
	}
	if len(js.Members) == 0 && js.Result == nil && len(js.TransitPorts) == 0 {
		v.add(js.Pos, "switch", sp, "no members, result or transit ports on this switch")
	}
}

// validateUnicast checks result.unicast: each worker bit once, not a member's on this switch (its
// port is the member's), and each port one of the group's replicas.
func validateUnicast(v *validator, js *JobSwitch, rp string) {
	seen := map[int]bool{}
	for _, m := range js.Members {
		seen[m.WorkerBit] = true
	}
	replicas := js.Result.ReplicaPorts(js)
	for i := range js.Result.Unicast {
		u := &js.Result.Unicast[i]
		up := fmt.Sprintf("%s.unicast[%d]", rp, i)
		switch {
		case u.WorkerBit < 0 || u.WorkerBit > maxWorkerBit:
			v.add(u.Pos, "worker_bit", up, "%d out of 0..%d", u.WorkerBit, maxWorkerBit)
		case seen[u.WorkerBit]:
			v.add(u.Pos, "worker_bit", up, "worker bit %d is a member's on this switch or listed twice (a member's port is its own)", u.WorkerBit)
		}
		seen[u.WorkerBit] = true
		if !slices.Contains(replicas, u.Port) {
			v.add(u.Pos, "port", up, "port %d is not one of the group's ports %v", u.Port, replicas)
		}
	}
}

// validateGroups checks multicast group ids are unique per switch across jobs and switch groups.
func (c *Config) validateGroups(v *validator) {
	bySwitch := map[string]map[int]string{}
	claim := func(sw string, id int, p Pos, field, path, what string) {
		m := bySwitch[sw]
		if m == nil {
			m = map[int]string{}
			bySwitch[sw] = m
		}
		if prev, dup := m[id]; dup {
			v.add(p, field, path, "multicast group %d on switch %q already used by %s", id, sw, prev)
			return
		}
		m[id] = fmt.Sprintf("%s (line %d)", what, p.At(field))
	}
	for i := range c.Switches {
		s := &c.Switches[i]
		for k := range s.MulticastGroups {
			g := &s.MulticastGroups[k]
			claim(s.Name, g.ID, g.Pos, "id", fmt.Sprintf("switches[%d].multicast_groups[%d]", i, k), "a switch group")
		}
	}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		for k := range j.Switches {
			js := &j.Switches[k]
			if js.Result != nil {
				claim(js.Switch, js.Result.MulticastGroup, js.Result.Pos, "multicast_group",
					fmt.Sprintf("jobs[%d].switches[%d].result", i, k), fmt.Sprintf("job %d", j.ID))
			}
		}
	}
}

func checkPort(v *validator, p Pos, field, path string, port int) {
	if port < 0 || port > maxPort {
		v.add(p, field, path, "port %d out of 0..%d", port, maxPort)
	}
}

func checkMAC(v *validator, p Pos, field, path, mac string) {
	if hw, err := net.ParseMAC(mac); err != nil || len(hw) != 6 {
		v.add(p, field, path, "%q is not a MAC address (aa:bb:cc:dd:ee:ff)", mac)
	}
}

func checkGroup(v *validator, p Pos, path, idField string, id int, ports []int) {
	if id < 1 || id > maxMcastID {
		v.add(p, idField, path, "multicast group %d out of 1..%d", id, maxMcastID)
	}
	if len(ports) == 0 {
		v.add(p, "ports", path, "a multicast group needs at least one port")
	}
	seen := map[int]bool{}
	for _, port := range ports {
		checkPort(v, p, "ports", path, port)
		if seen[port] {
			v.add(p, "ports", path, "port %d listed twice", port)
		}
		seen[port] = true
	}
}
