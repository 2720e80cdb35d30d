package refswitch

import (
	"slices"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// readBatch bounds the entities per ReadResponse (a wildcard register read yields ~70k).
const readBatch = 1000

// Read streams table entries, counters, registers and multicast groups. Any client may read.
func (s *P4RuntimeServer) Read(req *p4v1.ReadRequest, stream p4v1.P4Runtime_ReadServer) error {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return err
	}
	var out []*p4v1.Entity
	err := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		p, err := s.pipeline()
		if err != nil {
			return err
		}
		emit := func(e *p4v1.Entity) { out = append(out, e) }
		for _, e := range req.GetEntities() {
			var err error
			switch x := e.GetEntity().(type) {
			case *p4v1.Entity_TableEntry:
				err = s.readTables(p, x.TableEntry, emit)
			case *p4v1.Entity_CounterEntry:
				err = s.readCounters(p, x.CounterEntry, emit)
			case *p4v1.Entity_RegisterEntry:
				err = s.readRegisters(p, x.RegisterEntry, emit)
			case *p4v1.Entity_PacketReplicationEngineEntry:
				err = s.readPRE(x.PacketReplicationEngineEntry, emit)
			case nil:
				err = status.Error(codes.InvalidArgument, "read request with an empty entity")
			default:
				err = status.Errorf(codes.Unimplemented, "reading %T is not implemented by the reference switch", x)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	for len(out) > 0 {
		n := min(len(out), readBatch)
		if err := stream.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	return nil
}

func (s *P4RuntimeServer) readTables(p *pipeline, e *p4v1.TableEntry, emit func(*p4v1.Entity)) error {
	if e.GetTableId() == 0 {
		for k := range numTables {
			s.tableEntries(p, k, nil, emit)
		}
		return nil
	}
	if !e.GetIsDefaultAction() && len(e.GetMatch()) == 0 {
		k, ok := p.tableByID[e.GetTableId()]
		if !ok {
			return unknownEntity(p, e.GetTableId(), "table")
		}
		s.tableEntries(p, k, nil, emit)
		return nil
	}
	op, err := p.decodeTableEntry(e, false)
	if err != nil {
		return err
	}
	if op.deflt {
		d := &tableOp{table: op.table, deflt: true, action: defaultAction(op.table)}
		if op.table == tableSettings {
			d = settingsOp(s.sw.Settings())
		}
		if d.action == actNoAction && p.actionID[actNoAction] == 0 {
			return status.Errorf(codes.NotFound, "table %s: the P4Info has no NoAction to report as its default", p.tableName[op.table])
		}
		emit(tableEntity(p.encodeTableEntry(d)))
		return nil
	}
	s.tableEntries(p, op.table, op, emit)
	return nil
}

// tableEntries emits the entries of table k, or only the one with only's key.
func (s *P4RuntimeServer) tableEntries(p *pipeline, k tableKind, only *tableOp, emit func(*p4v1.Entity)) {
	var ops []*tableOp
	switch k {
	case tableIPv4LPM:
		for _, r := range s.sw.Routes() {
			ops = append(ops, routeOp(r))
		}
	case tableJob:
		for key, v := range s.sw.Jobs() {
			ops = append(ops, jobOp(key, v))
		}
	case tablePS:
		for job, v := range s.sw.AllPS() {
			ops = append(ops, psOp(job, v))
		}
	case tableUnicast:
		for k, port := range s.sw.Unicasts() {
			ops = append(ops, unicastOp(k, port))
		}
	}
	slices.SortFunc(ops, compareOps)
	for _, op := range ops {
		if only == nil || (slices.Equal(op.keys, only.keys) && op.prefix == only.prefix) {
			emit(tableEntity(p.encodeTableEntry(op)))
		}
	}
}

// compareOps orders entries by key so reads are deterministic.
func compareOps(a, b *tableOp) int {
	if c := slices.Compare(a.keys, b.keys); c != 0 {
		return c
	}
	return a.prefix - b.prefix
}

func tableEntity(e *p4v1.TableEntry) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: e}}
}

func (s *P4RuntimeServer) readPRE(e *p4v1.PacketReplicationEngineEntry, emit func(*p4v1.Entity)) error {
	g := e.GetMulticastGroupEntry()
	if g == nil {
		return status.Error(codes.Unimplemented, "clone sessions are not implemented by the reference switch")
	}
	groups := s.sw.McastGroups()
	ids := make([]uint16, 0, len(groups))
	for id := range groups {
		if g.GetMulticastGroupId() == 0 || uint32(id) == g.GetMulticastGroupId() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		emit(&p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: mcastEntry(id, groups[id])}})
	}
	return nil
}
