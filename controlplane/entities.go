package controlplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/antoninbas/p4runtime-go-client/pkg/util/conversion"
	"github.com/inapack/inapack/p4src/wire"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// canon returns the canonical P4Runtime bytestring of v (shortest form, zero is one byte).
func canon(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return conversion.ToCanonicalBytestring(b[:])
}

func (s *Schema) exact(table, field string, v uint64) *p4v1.FieldMatch {
	f := s.field(s.tables[table], field)
	return &p4v1.FieldMatch{FieldId: f.GetId(), FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: canon(v)}}}
}

func (s *Schema) action(name string, params ...uint64) *p4v1.TableAction {
	a := s.actions[name]
	act := &p4v1.Action{ActionId: a.GetPreamble().GetId()}
	// requiredActions lists parameters in the order the callers pass values.
	for i, pn := range actionParams(name) {
		act.Params = append(act.Params, &p4v1.Action_Param{ParamId: param(a, pn).GetId(), Value: canon(params[i])})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: act}}
}

func (s *Schema) tableID(name string) uint32 { return s.tables[name].GetPreamble().GetId() }

func tableEntity(te *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// RouteEntity is the ipv4_lpm entry of r (r must be valid).
func (s *Schema) RouteEntity(r Route) (*p4v1.Entity, error) {
	p, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return nil, err
	}
	p = p.Masked()
	mac, err := macValue(r.MAC)
	if err != nil {
		return nil, err
	}
	a4 := p.Addr().As4()
	f := s.field(s.tables[TableIPv4LPM], "dst_addr")
	return tableEntity(&p4v1.TableEntry{
		TableId: s.tableID(TableIPv4LPM),
		Match: []*p4v1.FieldMatch{{FieldId: f.GetId(), FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{
			Value: conversion.ToCanonicalBytestring(a4[:]), PrefixLen: int32(p.Bits())}}}},
		Action: s.action(ActionForward, mac, uint64(r.Port)),
	}), nil
}

// jobEntry is the ina_job entry of (job, port, member). Result and transit entries have member 0:
// the switch zeroes the member of everything a member's data leaves as, and a PS sends 0.
func (s *Schema) jobEntry(job, port, member int, act *p4v1.TableAction) *p4v1.Entity {
	return tableEntity(&p4v1.TableEntry{
		TableId: s.tableID(TableJob),
		Match: []*p4v1.FieldMatch{s.exact(TableJob, "job_id", uint64(job)), s.exact(TableJob, "ingress_port", uint64(port)),
			s.exact(TableJob, "member", uint64(member))},
		Action: act,
	})
}

// JobEntities are the ina_job, ina_ps and multicast entries of job j on switch sw.
func (s *Schema) JobEntities(j *JobConfig, js *JobSwitch) ([]*p4v1.Entity, error) {
	var out []*p4v1.Entity
	mac, err := macValue(js.PS.MAC)
	if err != nil {
		return nil, fmt.Errorf("job %d ps mac: %w", j.ID, err)
	}
	ip, err := netip.ParseAddr(js.PS.IP)
	if err != nil || !ip.Is4() {
		return nil, fmt.Errorf("job %d ps ip %q: not IPv4", j.ID, js.PS.IP)
	}
	ip4 := ip.As4()
	out = append(out, tableEntity(&p4v1.TableEntry{
		TableId: s.tableID(TablePS),
		Match:   []*p4v1.FieldMatch{s.exact(TablePS, "job_id", uint64(j.ID))},
		Action:  s.action(ActionSetPS, uint64(js.PS.Port), mac, uint64(binary.BigEndian.Uint32(ip4[:]))),
	}))
	ina := uint64(0)
	if j.INAEnabled() {
		ina = 1
	}
	for _, m := range js.Members {
		out = append(out, s.jobEntry(j.ID, m.Port, m.Member, s.action(ActionWorker, uint64(1)<<m.WorkerBit, uint64(js.LocalFanIn()), uint64(j.Cap()), ina)))
	}
	if r := js.Result; r != nil {
		out = append(out, s.jobEntry(j.ID, r.Port, 0, s.action(ActionResult, uint64(r.MulticastGroup))))
		out = append(out, MulticastEntity(r.MulticastGroup, r.ReplicaPorts(js)))
	}
	for _, p := range js.TransitPorts {
		out = append(out, s.jobEntry(j.ID, p, 0, s.action(ActionTransit)))
	}
	return append(out, s.unicastEntities(j, js)...), nil
}

// unicastEntities are the ina_unicast entries of job j on a switch of its result path: for each
// worker, the port toward it, which a UNICAST result (the PS's answer to that worker's RESEND)
// leaves by alone. A member's is its own port (members behind one port share it: the other's socket
// drops the result as one it does not wait for); a worker behind another switch's is the group's
// branch toward it (result.unicast, which topology.Derive fills from the tree). None without the
// table in the program, or off the result path.
func (s *Schema) unicastEntities(j *JobConfig, js *JobSwitch) []*p4v1.Entity {
	if !s.HasUnicast() || js.Result == nil {
		return nil
	}
	var out []*p4v1.Entity
	entry := func(bit, port int) {
		out = append(out, tableEntity(&p4v1.TableEntry{
			TableId: s.tableID(TableUnicast),
			Match:   []*p4v1.FieldMatch{s.exact(TableUnicast, "job_id", uint64(j.ID)), s.exact(TableUnicast, "bitmap", uint64(1)<<bit)},
			Action:  s.action(ActionUnicastPort, uint64(port)),
		}))
	}
	for _, m := range js.Members {
		entry(m.WorkerBit, m.Port)
	}
	for _, u := range js.Result.Unicast {
		entry(u.WorkerBit, u.Port)
	}
	return out
}

// SettingsEntity is the ina_settings default entry for st (nil: the documented defaults).
func (s *Schema) SettingsEntity(st *Settings) *p4v1.Entity {
	preempt, release, ecn, slots := uint64(1), uint64(0), uint64(wire.MaxECNThreshold), uint64(wire.NumSlots)
	if st != nil {
		if st.Preempt != nil && !*st.Preempt {
			preempt = 0
		}
		if st.Release == "atp" {
			release = 1
		}
		if st.ECNThreshold != nil {
			ecn = uint64(*st.ECNThreshold)
		}
		if st.ActiveSlots != nil {
			slots = uint64(*st.ActiveSlots)
		}
	}
	return tableEntity(&p4v1.TableEntry{
		TableId:         s.tableID(TableSettings),
		IsDefaultAction: true,
		Action:          s.action(ActionSettings, preempt, release, ecn, slots),
	})
}

// MulticastEntity is the multicast group id replicating to ports (instance 0 each).
func MulticastEntity(id int, ports []int) *p4v1.Entity {
	g := &p4v1.MulticastGroupEntry{MulticastGroupId: uint32(id)}
	for _, p := range slices.Sorted(slices.Values(ports)) {
		g.Replicas = append(g.Replicas, &p4v1.Replica{EgressPort: uint32(p)})
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: g}}}}
}

// Desired is the complete state the controller wants on one switch, keyed by entity identity.
type Desired map[string]*p4v1.Entity

func (d Desired) add(e *p4v1.Entity) error {
	k := EntityKey(e)
	if _, dup := d[k]; dup {
		return fmt.Errorf("two entries with the same key %s", k)
	}
	d[k] = e
	return nil
}

// DesiredState builds the desired state of switch sw from cfg (which must have been validated).
func (s *Schema) DesiredState(cfg *Config, sw string) (Desired, error) {
	sc := cfg.Switch(sw)
	if sc == nil {
		return nil, fmt.Errorf("unknown switch %q", sw)
	}
	d := Desired{}
	if err := d.add(s.SettingsEntity(sc.Settings)); err != nil {
		return nil, err
	}
	for _, r := range sc.Routes {
		e, err := s.RouteEntity(r)
		if err != nil {
			return nil, fmt.Errorf("switch %s route %s: %w", sw, r.Prefix, err)
		}
		if err := d.add(e); err != nil {
			return nil, err
		}
	}
	for _, g := range sc.MulticastGroups {
		if err := d.add(MulticastEntity(g.ID, g.Ports)); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		for k := range j.Switches {
			if j.Switches[k].Switch != sw {
				continue
			}
			es, err := s.JobEntities(j, &j.Switches[k])
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				if err := d.add(e); err != nil {
					return nil, fmt.Errorf("switch %s job %d: %w", sw, j.ID, err)
				}
			}
		}
	}
	return d, nil
}

func macValue(s string) (uint64, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return 0, fmt.Errorf("%q is not a MAC address", s)
	}
	var b [8]byte
	copy(b[2:], hw)
	return binary.BigEndian.Uint64(b[:]), nil
}
