package wire

import "strconv"

// Constants shared with the P4 program. p4src/define.p4 and p4src/size.p4 hold the same numbers;
// p4src/constants_test.go fails if the two disagree.
const (
	Version    = 1     // INA_VERSION
	UDPPort    = 47000 // INA_UDP_PORT
	NumValues  = 64    // NUM_VALUES (K): int32 values per packet
	NumSlots   = 1024  // NUM_SLOTS: aggregator slots in the switch
	MaxJobs    = 1024  // MAX_JOBS: job ids are 1..MaxJobs-1
	MaxWorkers = 32    // bits in the worker bitmap
	MaxMembers = 16    // MAX_MEMBERS: workers of one job behind one switch port (the member field's 4 bits)

	// MaxECNThreshold is the largest ina_settings ecn_threshold (bit<19>) and its initial default:
	// no queue is that deep, so it never marks.
	MaxECNThreshold = 0x7FFFF

	HeaderLen     = 16                      // INA header without values
	PayloadLen    = HeaderLen + 4*NumValues // UDP payload
	UDPLen        = 8 + PayloadLen          // UDP length field
	IPv4TotalLen  = 20 + UDPLen             // IPv4 total length field
	FrameLen      = 14 + IPv4TotalLen       // whole Ethernet frame
	EtherTypeIPv4 = 0x0800
	ProtoUDP      = 17
)

// Type is the INA packet type.
type Type uint8

const (
	TypeData   Type = 1 // worker -> PS
	TypeResult Type = 2 // PS -> workers
)

func (t Type) String() string {
	switch t {
	case TypeData:
		return "data"
	case TypeResult:
		return "result"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Flags is the INA header's flag field: the low 12 bits of the header's third 16-bit word, whose
// top 4 bits are the member index (Header.Member).
type Flags uint16

// FlagsMask is the part of that word Flags occupies.
const FlagsMask Flags = 0x0FFF

const (
	FlagResend    Flags = 0x0001 // worker retransmission after a timeout
	FlagCollision Flags = 0x0002 // forwarded unaggregated: slot busy
	FlagPreempted Flags = 0x0004 // carries an evicted partial sum
	FlagFlushed   Flags = 0x0008 // carries a partial sum flushed by a resend
	FlagBypass    Flags = 0x0010 // data: PS only; result: summed on the PS path
	FlagOverflow  Flags = 0x0020 // data: a value saturated; result: resend with bypass
	FlagECN       Flags = 0x0040 // congestion experienced
	FlagStale     Flags = 0x0080 // carries an older seq's partial taken over by a newer seq
	FlagFloat     Flags = 0x0100 // with bypass: values are float32 bit patterns
	FlagCorrupt   Flags = 0x0200 // result: a packet failed the integrity check; resend with bypass
	FlagUnicast   Flags = 0x0400 // result: deliver to the one worker whose bit is the bitmap (ina_unicast)

	// WorkerFlags are the flags a worker may set; the switch clears the others on ingress.
	WorkerFlags = FlagResend | FlagBypass | FlagECN | FlagFloat
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagResend, "resend"}, {FlagCollision, "collision"}, {FlagPreempted, "preempted"},
	{FlagFlushed, "flushed"}, {FlagBypass, "bypass"}, {FlagOverflow, "overflow"},
	{FlagECN, "ecn"}, {FlagStale, "stale"}, {FlagFloat, "float"}, {FlagCorrupt, "corrupt"},
	{FlagUnicast, "unicast"},
}

// FlagByName returns the flag with the given lower-case name.
func FlagByName(name string) (Flags, bool) {
	for _, n := range flagNames {
		if n.name == name {
			return n.f, true
		}
	}
	return 0, false
}

// Names lists the names of the set flags, in bit order.
func (f Flags) Names() []string {
	var out []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

func (f Flags) String() string {
	s := ""
	for i, n := range f.Names() {
		if i > 0 {
			s += "|"
		}
		s += n
	}
	if s == "" {
		return "none"
	}
	return s
}

// Event indexes the switch's ina_events and ina_job_events counters.
type Event uint8

const (
	EventClaimed Event = iota
	EventAggregated
	EventCompleted
	EventDuplicate
	EventFlushed
	EventCollision
	EventPreempted
	EventEvicted
	EventStale
	EventResendForwarded
	EventBypass
	EventResult
	EventTransit
	EventDropUnknownJob
	EventDropBadPort
	EventDropSlotRange
	EventDropMalformed
	EventDropVersion
	EventOverflow
	EventECNMarked
	EventIPv4Forwarded
	EventIPv4Dropped
	NumEvents // NUM_EVENTS
)

var eventNames = [NumEvents]string{
	"claimed", "aggregated", "completed", "duplicate", "flushed", "collision", "preempted",
	"evicted", "stale", "resend_forwarded", "bypass", "result", "transit", "drop_unknown_job",
	"drop_bad_port", "drop_slot_range", "drop_malformed", "drop_version", "overflow",
	"ecn_marked", "ipv4_forwarded", "ipv4_dropped",
}

func (e Event) String() string {
	if e < NumEvents {
		return eventNames[e]
	}
	return "event(" + strconv.Itoa(int(e)) + ")"
}

// EventByName returns the event with the given name, as used in docs and vectors.
func EventByName(name string) (Event, bool) {
	for i, n := range eventNames {
		if n == name {
			return Event(i), true
		}
	}
	return 0, false
}

// JobEventIndex is the ina_job_events counter index of event e for job.
func JobEventIndex(job uint16, e Event) int { return int(job)*int(NumEvents) + int(e) }
