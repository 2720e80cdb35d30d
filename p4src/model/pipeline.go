package model

import (
	"encoding/binary"
	"net/netip"

	"github.com/inapack/inapack/p4src/wire"
)

// kind is what the ingress decided a packet is; egress treats each kind differently.
type kind uint8

const (
	kindIPv4   kind = iota // ordinary IPv4
	kindData               // INA data
	kindResult             // INA result
)

// Process runs one packet through parser, ingress, PRE and egress and returns the packets that
// leave, in order. frame is not modified or retained.
func (s *Switch) Process(inPort uint16, frame []byte) []Output {
	return s.ProcessAppend(nil, inPort, frame)
}

// ProcessAppend is Process appending the packets that leave to dst: with a dst of spare capacity
// and a recycling NewFrame, processing a packet allocates nothing.
func (s *Switch) ProcessAppend(dst []Output, inPort uint16, frame []byte) []Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	outs, k := s.ingress(inPort, frame)
	for i := range outs {
		s.egress(&outs[i], k)
	}
	return append(dst, outs...)
}

// frame returns a buffer for an emitted frame of n bytes.
func (s *Switch) frame(n int) []byte {
	if s.NewFrame != nil {
		return s.NewFrame(n)[:n]
	}
	return make([]byte, n)
}

// single is a one-packet output, in scratch space that ProcessAppend copies out.
func (s *Switch) single(port uint16, f []byte) []Output {
	s.one[0] = Output{Port: port, Frame: f}
	return s.one[:]
}

// ingress is the parser and the ingress control: it classifies the packet and returns where it goes.
func (s *Switch) ingress(inPort uint16, f []byte) ([]Output, kind) {
	if len(f) < offIP || be16(f[offEthType:]) != wire.EtherTypeIPv4 {
		return nil, kindIPv4 // not IPv4: dropped, not counted
	}
	if len(f) < offUDP {
		s.count(noJob, wire.EventIPv4Dropped, len(f)) // IPv4 header cut short: parser error
		return nil, kindIPv4
	}
	// The parser recognises INA once the whole UDP header is in; a UDP header cut short leaves
	// only IPv4 valid, so such a frame is ordinary traffic. A fragment other than the first
	// carries no UDP header, so it is never INA.
	if f[offIPProto] == wire.ProtoUDP && fragOffset(f) == 0 && len(f) >= offINA &&
		be16(f[offUDPDport:]) == wire.UDPPort {
		return s.ina(inPort, f)
	}
	return s.ipv4(f), kindIPv4
}

// ipv4 is ordinary IPv4 forwarding: a header the switch would not route is dropped (bad checksum,
// options, TTL that would reach 0), otherwise the ipv4_lpm table forwards or drops it.
func (s *Switch) ipv4(f []byte) []Output {
	if !checksumOK(f) || f[offIP]&0x0f != 5 || f[offIPTTL] <= 1 {
		s.count(noJob, wire.EventIPv4Dropped, len(f))
		return nil
	}
	dst := netip.AddrFrom4([4]byte(f[offIPDst : offIPDst+4]))
	for i := range s.routes {
		r := &s.routes[i]
		if !r.Prefix.Contains(dst) {
			continue
		}
		out := s.frame(len(f))
		copy(out, f)
		copy(out[6:12], f[0:6]) // src mac := old dst mac
		copy(out[0:6], r.DstMAC[:])
		out[offIPTTL]--
		s.count(noJob, wire.EventIPv4Forwarded, len(f))
		return s.single(r.Port, out)
	}
	s.count(noJob, wire.EventIPv4Dropped, len(f))
	return nil
}

// ina validates an INA packet (docs/protocol.md, "Validation") and dispatches it by table role.
func (s *Switch) ina(inPort uint16, f []byte) ([]Output, kind) {
	n := len(f)
	if n != wire.FrameLen || f[offIP]&0x0f != 5 || be16(f[offIPTotLen:]) != wire.IPv4TotalLen ||
		be16(f[offUDPLen:]) != wire.UDPLen || !checksumOK(f) || moreFragments(f) {
		s.count(noJob, wire.EventDropMalformed, n)
		return nil, kindData
	}
	h := readINA(f)
	if h.version != wire.Version {
		s.count(noJob, wire.EventDropVersion, n)
		return nil, kindData
	}
	if h.typ != uint8(wire.TypeData) && h.typ != uint8(wire.TypeResult) {
		s.count(noJob, wire.EventDropMalformed, n)
		return nil, kindData
	}
	if h.job >= wire.MaxJobs || !s.ps[h.job].ok {
		s.count(noJob, wire.EventDropUnknownJob, n)
		return nil, kindData
	}
	job := int(h.job)
	e, ok := s.jobs[JobKey{Job: h.job, Port: inPort, Member: h.member}]
	switch {
	case ok && h.typ == uint8(wire.TypeResult) && e.Role == RoleResult:
		return s.result(inPort, &h, &e, f), kindResult
	case ok && h.typ == uint8(wire.TypeData) && e.Role == RoleWorker:
		return s.worker(&h, &e, f), kindData
	case ok && h.typ == uint8(wire.TypeData) && e.Role == RoleTransit:
		s.count(job, wire.EventTransit, n)
		return s.out(h.job, s.toPS(f, &s.ps[h.job].PSEntry)), kindData
	}
	s.count(job, wire.EventDropBadPort, n)
	return nil, kindData
}

// out wraps one frame going to job's PS port.
func (s *Switch) out(job uint16, f []byte) []Output {
	return s.single(s.ps[job].Port, f)
}

// result replicates a result to the job's multicast group, except back out the port it came in
// on; in ATP mode it frees the slot first. Group 0 and a group never configured have no ports. A
// FLAG_UNICAST result whose (job, bitmap) has an ina_unicast entry leaves by that port alone (not
// back out its ingress port either); without one it is replicated as any result.
func (s *Switch) result(inPort uint16, h *inaHeader, e *JobEntry, f []byte) []Output {
	if s.settings.ReleaseOnResult && h.slot < s.settings.slots() {
		if sl := &s.slots[h.slot]; !sl.Free() && sl.Job == h.job && sl.Seq == h.seq {
			sl.release()
		}
	}
	s.count(int(h.job), wire.EventResult, len(f))
	if h.flags&wire.FlagUnicast != 0 {
		if p, ok := s.unicast[UnicastKey{Job: h.job, Bitmap: be32(f[offBitmap:])}]; ok {
			if p == inPort {
				return nil
			}
			c := s.frame(len(f))
			copy(c, f)
			return s.single(p, c)
		}
	}
	outs := s.multi[:0]
	for _, p := range s.groups[e.McastGroup] {
		if p == inPort {
			continue
		}
		c := s.frame(len(f))
		copy(c, f)
		outs = append(outs, Output{Port: p, Frame: c})
	}
	s.multi = outs
	return outs
}

// egress marks ECN on INA data packets above the queue threshold and runs the deparser.
func (s *Switch) egress(o *Output, k kind) {
	if k == kindData {
		var depth uint32
		if s.QueueDepth != nil {
			depth = s.QueueDepth(o.Port)
		}
		if depth >= s.settings.ECNThreshold {
			fl := wire.Flags(be16(o.Frame[offFlags:])) | wire.FlagECN
			binary.BigEndian.PutUint16(o.Frame[offFlags:], uint16(fl))
			s.count(int(be16(o.Frame[offJob:])), wire.EventECNMarked, len(o.Frame))
		}
	}
	deparse(o.Frame, k != kindIPv4)
}
