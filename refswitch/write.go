package refswitch

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// Write applies the updates in order (CONTINUE_ON_ERROR). When any fails, the call fails with
// UNKNOWN and its status details hold one p4.v1.Error per update, OK ones included, as the
// P4Runtime spec and BMv2 do; the message names the first failure.
func (s *P4RuntimeServer) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	if err := s.arb.checkPrimary(req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	if req.GetAtomicity() != p4v1.WriteRequest_CONTINUE_ON_ERROR {
		return nil, status.Errorf(codes.Unimplemented, "atomicity %v is not implemented (only CONTINUE_ON_ERROR)", req.GetAtomicity())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pipe, err := s.pipeline()
	if err != nil {
		return nil, err
	}
	details := make([]protoadapt.MessageV1, len(req.GetUpdates()))
	var first error
	failed := 0
	for i, u := range req.GetUpdates() {
		err := s.apply(pipe, u)
		e := &p4v1.Error{CanonicalCode: int32(code.Code_OK)}
		if err != nil {
			st := status.Convert(err)
			e.CanonicalCode, e.Message = int32(st.Code()), st.Message()
			failed++
			if first == nil {
				first = err
			}
			s.log.Debug("write update failed", "index", i, "type", u.GetType(), "err", err)
		}
		details[i] = e
	}
	if failed == 0 {
		return &p4v1.WriteResponse{}, nil
	}
	msg := fmt.Sprintf("%d of %d updates failed; first: %s: %s", failed, len(details), status.Code(first), status.Convert(first).Message())
	st, derr := status.New(codes.Unknown, msg).WithDetails(details...)
	if derr != nil {
		return nil, status.Error(codes.Unknown, msg)
	}
	return nil, st.Err()
}

// UpdateErrors extracts the per-update errors from a failed Write's status, nil if it has none.
func UpdateErrors(err error) []*p4v1.Error {
	var out []*p4v1.Error
	for _, d := range status.Convert(err).Details() {
		if e, ok := d.(*p4v1.Error); ok {
			out = append(out, e)
		}
	}
	return out
}

func (s *P4RuntimeServer) apply(p *pipeline, u *p4v1.Update) error {
	t := u.GetType()
	if t != p4v1.Update_INSERT && t != p4v1.Update_MODIFY && t != p4v1.Update_DELETE {
		return invalid("update type %v", t)
	}
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.writeTable(p, t, e.TableEntry)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return s.writePRE(t, e.PacketReplicationEngineEntry)
	case *p4v1.Entity_CounterEntry:
		return s.writeCounter(p, t, e.CounterEntry)
	case *p4v1.Entity_RegisterEntry:
		return s.writeRegister(p, t, e.RegisterEntry)
	case nil:
		return invalid("update without an entity")
	default:
		return status.Errorf(codes.Unimplemented, "writing %T is not implemented by the reference switch", e)
	}
}

func (s *P4RuntimeServer) writeTable(p *pipeline, t p4v1.Update_Type, e *p4v1.TableEntry) error {
	op, err := p.decodeTableEntry(e, t != p4v1.Update_DELETE)
	if err != nil {
		return err
	}
	if op.deflt {
		return s.writeDefault(p, t, op)
	}
	switch op.table {
	case tableIPv4LPM:
		return s.writeRoute(t, op)
	case tableJob:
		return s.writeJob(t, op)
	case tablePS:
		return s.writePS(t, op)
	case tableUnicast:
		return s.writeUnicast(t, op)
	}
	return invalid("table %s is keyless: modify its default entry instead", p.tableName[op.table])
}

// writeDefault changes a table's default action. Only ina_settings has a settable one; the other
// tables accept a MODIFY to the default they already have.
func (s *P4RuntimeServer) writeDefault(p *pipeline, t p4v1.Update_Type, op *tableOp) error {
	name := p.tableName[op.table]
	if t != p4v1.Update_MODIFY {
		return invalid("table %s: the default entry can only be modified", name)
	}
	if op.table == tableSettings {
		v := op.settings()
		if err := v.Validate(); err != nil {
			return invalid("table ina_settings: %v", err)
		}
		s.sw.SetSettings(v)
		return nil
	}
	if want := defaultAction(op.table); op.action != want {
		return invalid("table %s: the reference switch implements only the default action %s", name, actionSpecs[want].name)
	}
	return nil
}

func defaultAction(k tableKind) actionKind {
	switch k {
	case tableIPv4LPM:
		return actDrop
	case tableSettings:
		return actSetSettings
	}
	return actNoAction
}

func (s *P4RuntimeServer) writeRoute(t p4v1.Update_Type, op *tableOp) error {
	r := op.route()
	exists := false
	for _, c := range s.sw.Routes() {
		exists = exists || c.Prefix == r.Prefix
	}
	if t != p4v1.Update_DELETE && op.action != actIPv4Forward {
		return invalid("table ipv4_lpm: entries take ipv4_forward (drop is the default action)")
	}
	if err := presence(t, "ipv4_lpm", exists, "%s", r.Prefix); err != nil {
		return err
	}
	if t == p4v1.Update_DELETE {
		s.sw.DeleteRoute(r.Prefix)
		return nil
	}
	return modelErr("ipv4_lpm", s.sw.SetRoute(r))
}

func (s *P4RuntimeServer) writeJob(t p4v1.Update_Type, op *tableOp) error {
	k := op.jobKey()
	_, exists := s.sw.Job(k)
	if err := presence(t, "ina_job", exists, "job %d port %d", k.Job, k.Port); err != nil {
		return err
	}
	if t == p4v1.Update_DELETE {
		s.sw.DeleteJob(k)
		return nil
	}
	e, err := op.jobEntry()
	if err != nil {
		return err
	}
	return modelErr("ina_job", s.sw.SetJob(k, e))
}

func (s *P4RuntimeServer) writePS(t p4v1.Update_Type, op *tableOp) error {
	job := uint16(op.keys[0])
	_, exists := s.sw.PS(job)
	if err := presence(t, "ina_ps", exists, "job %d", job); err != nil {
		return err
	}
	if t == p4v1.Update_DELETE {
		s.sw.DeletePS(job)
		return nil
	}
	return modelErr("ina_ps", s.sw.SetPS(job, op.psEntry()))
}

func (s *P4RuntimeServer) writeUnicast(t p4v1.Update_Type, op *tableOp) error {
	k := op.unicastKey()
	_, exists := s.sw.Unicast(k)
	if err := presence(t, "ina_unicast", exists, "job %d bitmap %#x", k.Job, k.Bitmap); err != nil {
		return err
	}
	if t == p4v1.Update_DELETE {
		s.sw.DeleteUnicast(k)
		return nil
	}
	return modelErr("ina_unicast", s.sw.SetUnicast(k, uint16(op.params[0])))
}

// modelErr turns the model's refusal of a value into INVALID_ARGUMENT naming the table.
func modelErr(table string, err error) error {
	if err == nil {
		return nil
	}
	return invalid("table %s: %v", table, err)
}

func (s *P4RuntimeServer) writePRE(t p4v1.Update_Type, e *p4v1.PacketReplicationEngineEntry) error {
	g := e.GetMulticastGroupEntry()
	if g == nil {
		return status.Error(codes.Unimplemented, "clone sessions are not implemented by the reference switch")
	}
	id := g.GetMulticastGroupId()
	if id == 0 || id > 0xffff {
		return invalid("multicast group id %d outside 1..65535", id)
	}
	_, exists := s.sw.McastGroups()[uint16(id)]
	switch {
	case t == p4v1.Update_INSERT && exists:
		return status.Errorf(codes.AlreadyExists, "multicast group %d exists", id)
	case t != p4v1.Update_INSERT && !exists:
		return status.Errorf(codes.NotFound, "no multicast group %d", id)
	case t == p4v1.Update_DELETE:
		s.sw.DeleteMcastGroup(uint16(id))
		return nil
	}
	type replica struct{ port, instance uint32 }
	seen := map[replica]bool{}
	ports := make([]uint16, 0, len(g.GetReplicas()))
	for _, r := range g.GetReplicas() {
		if r.GetEgressPort() > maxPort {
			return invalid("multicast group %d: egress port %d outside 0..%d", id, r.GetEgressPort(), maxPort)
		}
		k := replica{r.GetEgressPort(), r.GetInstance()}
		if seen[k] {
			return invalid("multicast group %d: replica (port %d, instance %d) given twice", id, k.port, k.instance)
		}
		seen[k] = true
		ports = append(ports, uint16(r.GetEgressPort()))
	}
	if err := s.sw.SetMcastGroup(uint16(id), ports); err != nil {
		return invalid("multicast group %d: %v", id, err)
	}
	return nil
}

// mcastEntry is the P4Runtime form of a model group; instances number repeats of a port.
func mcastEntry(id uint16, ports []uint16) *p4v1.PacketReplicationEngineEntry {
	g := &p4v1.MulticastGroupEntry{MulticastGroupId: uint32(id)}
	n := map[uint16]uint32{}
	for _, p := range ports {
		g.Replicas = append(g.Replicas, &p4v1.Replica{EgressPort: uint32(p), Instance: n[p]})
		n[p]++
	}
	return &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: g}}
}

// presence applies P4Runtime's rule for an exact entry: an INSERT of an entry that exists is
// AlreadyExists, a MODIFY or DELETE of one that does not is NotFound; key and args name the entry.
func presence(t p4v1.Update_Type, table string, exists bool, key string, args ...any) error {
	switch {
	case t == p4v1.Update_INSERT && exists:
		return status.Errorf(codes.AlreadyExists, "table %s: an entry for %s exists", table, fmt.Sprintf(key, args...))
	case t != p4v1.Update_INSERT && !exists:
		return status.Errorf(codes.NotFound, "table %s: no entry for %s", table, fmt.Sprintf(key, args...))
	}
	return nil
}
