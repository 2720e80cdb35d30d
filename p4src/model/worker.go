package model

import "github.com/inapack/inapack/p4src/wire"

// worker is the data path for a packet from member worker w of job j (docs/protocol.md, "Data
// packet from member worker w"): the steps are tried in the documented order.
func (s *Switch) worker(h *inaHeader, e *JobEntry, f []byte) []Output {
	n := len(f)
	j := int(h.job)
	flags := h.flags & wire.WorkerFlags // a worker cannot forge the switch's flags
	p := min(h.prio, e.PriorityCap)
	bit := e.WorkerBit
	ps := &s.ps[h.job].PSEntry
	resend := flags&wire.FlagResend != 0
	ecn := flags&wire.FlagECN != 0
	values := f[offValues:]

	// unaggregated sends the packet's own contribution to j's PS with the named flag.
	unaggregated := func(named wire.Flags, ev wire.Event) []Output {
		o := s.toPS(f, ps)
		setINA(o, p, flags|named, h.job, h.seq, bit)
		s.count(j, ev, n)
		return s.out(h.job, o)
	}

	// Step 1: bypass. Step 2: fan-in 1 (or 0, which no count can reach), nothing to aggregate
	// here. Neither touches a slot, so neither is range-checked.
	if !e.INAEnabled || flags&wire.FlagBypass != 0 {
		return unaggregated(0, wire.EventBypass)
	}
	if e.FanIn <= 1 {
		return unaggregated(0, wire.EventCompleted)
	}
	if h.slot >= s.settings.slots() {
		s.count(j, wire.EventDropSlotRange, n)
		return nil
	}

	sl := &s.slots[h.slot]
	if !sl.Free() && sl.Job == h.job && sl.Seq == h.seq {
		return s.own(h, e, sl, f, flags, p, bit)
	}
	switch {
	case resend: // Step 5: the slot does not hold (j, q); a RESEND never claims.
		return unaggregated(0, wire.EventResendForwarded)
	case sl.Free(): // Step 3: claim.
		sl.claim(h.job, h.seq, p, bit, ecn, values)
		s.count(j, wire.EventClaimed, n)
		return nil
	case sl.Job == h.job && int32(h.seq-sl.Seq) > 0: // Step 6: a newer seq takes over.
		o := s.evict(sl, f, wire.FlagStale)
		sl.claim(h.job, h.seq, p, bit, ecn, values)
		s.count(j, wire.EventStale, n)
		return o
	case sl.Job == h.job: // Step 7: an older seq collides.
		return unaggregated(wire.FlagCollision, wire.EventCollision)
	case s.settings.Preempt && p > sl.Priority: // Step 8: preemption.
		victim := sl.Job
		o := s.evict(sl, f, wire.FlagPreempted)
		sl.claim(h.job, h.seq, p, bit, ecn, values)
		s.count(j, wire.EventPreempted, n)
		s.countJob(victim, wire.EventEvicted, n)
		return o
	}
	return unaggregated(wire.FlagCollision, wire.EventCollision)
}

// own handles step 4: the slot holds (j, q).
func (s *Switch) own(h *inaHeader, e *JobEntry, sl *Slot, f []byte, flags wire.Flags, p uint8, bit uint32) []Output {
	n := len(f)
	j := int(h.job)
	ecn := flags&wire.FlagECN != 0
	resend := flags&wire.FlagResend != 0
	if !resend && sl.Bitmap&bit != 0 {
		s.count(j, wire.EventDuplicate, n)
		return nil
	}
	if sl.Bitmap&bit == 0 && sl.add(bit, ecn, f[offValues:]) {
		s.count(j, wire.EventOverflow, n)
	}
	var ev wire.Event
	switch {
	case resend:
		ev = wire.EventFlushed
		flags |= wire.FlagFlushed
	case sl.Count >= e.FanIn:
		ev = wire.EventCompleted
	default:
		s.count(j, wire.EventAggregated, n)
		return nil
	}
	o := s.toPS(f, &s.ps[h.job].PSEntry)
	setINA(o, p, flags|sl.flags(), h.job, h.seq, sl.Bitmap)
	setValues(o, &sl.Values)
	if ev == wire.EventCompleted && s.settings.ReleaseOnResult {
		sl.State |= SlotComplete
	} else {
		sl.release()
	}
	s.count(j, ev, n)
	return s.out(h.job, o)
}

// evict builds the packet that carries the slot's current owner (identity, priority, bitmap,
// values, state flags) to that owner's PS, flagged named. It returns nil when the owner has no
// ina_ps entry any more (its job was removed while it held the slot): the partial is dropped and
// counted drop_unknown_job, as a packet of its own with no trusted job.
func (s *Switch) evict(sl *Slot, f []byte, named wire.Flags) []Output {
	if !s.ps[sl.Job].ok {
		s.count(noJob, wire.EventDropUnknownJob, len(f))
		return nil
	}
	o := s.toPS(f, &s.ps[sl.Job].PSEntry)
	setINA(o, sl.Priority, named|sl.flags(), sl.Job, sl.Seq, sl.Bitmap)
	setValues(o, &sl.Values)
	return s.out(sl.Job, o)
}
