package refswitch

import (
	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// The model's counters only grow (until a reset). A P4Runtime counter write sets the value a
// client reads, so the server keeps, per written index, the offset between the model and what was
// written.

type counterIndex struct {
	kind  counterKind
	index int64
}

type counterOffset struct{ packets, bytes int64 }

// counterValues returns the model's counters of kind k at index idx, or every index when idx < 0.
func (s *P4RuntimeServer) counterValues(k counterKind, idx int64) map[int64]model.Counter {
	out := map[int64]model.Counter{}
	switch {
	case k == counterEvents && idx < 0:
		for i, c := range s.sw.Events() {
			out[int64(i)] = c
		}
	case k == counterEvents:
		out[idx] = s.sw.Events()[idx]
	case idx < 0:
		for job := range wire.MaxJobs {
			for e, c := range s.sw.JobEvents(uint16(job)) {
				out[int64(job)*int64(wire.NumEvents)+int64(e)] = c
			}
		}
	default:
		out[idx] = s.sw.JobEvents(uint16(idx / int64(wire.NumEvents)))[idx%int64(wire.NumEvents)]
	}
	return out
}

// counterData applies the written offset; s.mu is held. A model reset behind the server's back
// (counters below the offset) drops the stale offset.
func (s *P4RuntimeServer) counterData(p *pipeline, k counterKind, idx int64, c model.Counter) *p4v1.CounterData {
	key := counterIndex{k, idx}
	off := s.offsets[key]
	pk, by := int64(c.Packets)-off.packets, int64(c.Bytes)-off.bytes
	if pk < 0 || by < 0 {
		delete(s.offsets, key)
		pk, by = int64(c.Packets), int64(c.Bytes)
	}
	d := &p4v1.CounterData{}
	unit := p.counterUnit[k]
	if unit != p4config.CounterSpec_BYTES {
		d.PacketCount = pk
	}
	if unit != p4config.CounterSpec_PACKETS {
		d.ByteCount = by
	}
	return d
}

func (s *P4RuntimeServer) counterIndexOf(p *pipeline, e *p4v1.CounterEntry) (counterKind, int64, error) {
	k, ok := p.counterByID[e.GetCounterId()]
	if !ok {
		return 0, 0, unknownEntity(p, e.GetCounterId(), "counter")
	}
	idx := int64(-1)
	if e.GetIndex() != nil {
		idx = e.GetIndex().GetIndex()
		if idx < 0 || idx >= counterSpecs[k].size {
			return 0, 0, invalid("counter %s: index %d outside 0..%d", counterSpecs[k].name, idx, counterSpecs[k].size-1)
		}
	}
	return k, idx, nil
}

// writeCounter sets counter values (usually to zero); an entry without an index sets all of them.
func (s *P4RuntimeServer) writeCounter(p *pipeline, t p4v1.Update_Type, e *p4v1.CounterEntry) error {
	if t != p4v1.Update_MODIFY {
		return invalid("counter entries can only be modified")
	}
	k, idx, err := s.counterIndexOf(p, e)
	if err != nil {
		return err
	}
	want := e.GetData()
	if want.GetPacketCount() < 0 || want.GetByteCount() < 0 {
		return invalid("counter %s: negative value", counterSpecs[k].name)
	}
	for i, c := range s.counterValues(k, idx) {
		s.offsets[counterIndex{k, i}] = counterOffset{int64(c.Packets) - want.GetPacketCount(), int64(c.Bytes) - want.GetByteCount()}
	}
	return nil
}

func (s *P4RuntimeServer) readCounters(p *pipeline, e *p4v1.CounterEntry, emit func(*p4v1.Entity)) error {
	kinds := []counterKind{counterEvents, counterJobEvents}
	idx := int64(-1)
	if e.GetCounterId() != 0 {
		k, i, err := s.counterIndexOf(p, e)
		if err != nil {
			return err
		}
		kinds, idx = []counterKind{k}, i
	}
	for _, k := range kinds {
		vals := s.counterValues(k, idx)
		for i := range counterSpecs[k].size {
			c, ok := vals[i]
			if !ok {
				continue
			}
			emit(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
				CounterId: p.counterID[k], Index: &p4v1.Index{Index: i}, Data: s.counterData(p, k, i, c),
			}}})
		}
	}
	return nil
}
