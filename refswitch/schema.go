package refswitch

import (
	"fmt"
	"strings"

	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// The entities the model implements, named as in docs/protocol.md. A pushed P4Info must contain
// each of them (matched by the last component of its name) with these widths; it may contain more,
// which the reference switch then refuses to write.

type tableKind int

const (
	tableIPv4LPM tableKind = iota
	tableJob
	tablePS
	tableSettings
	tableUnicast
	numTables
)

type actionKind int

const (
	actIPv4Forward actionKind = iota
	actDrop
	actWorker
	actResult
	actTransit
	actNoAction
	actSetPS
	actSetSettings
	actUnicastPort
	numActions
)

type keySpec struct {
	name  string
	width int32
	match p4config.MatchField_MatchType
}

type paramSpec struct {
	name  string
	width int32
}

type tableSpec struct {
	name    string
	keys    []keySpec
	actions []actionKind
}

type actionSpec struct {
	name   string
	params []paramSpec
}

var tableSpecs = [numTables]tableSpec{
	tableIPv4LPM:  {"ipv4_lpm", []keySpec{{"dst_addr", 32, p4config.MatchField_LPM}}, []actionKind{actIPv4Forward, actDrop}},
	tableJob:      {"ina_job", []keySpec{{"job_id", 16, p4config.MatchField_EXACT}, {"ingress_port", 9, p4config.MatchField_EXACT}, {"member", 4, p4config.MatchField_EXACT}}, []actionKind{actWorker, actResult, actTransit}},
	tablePS:       {"ina_ps", []keySpec{{"job_id", 16, p4config.MatchField_EXACT}}, []actionKind{actSetPS}},
	tableSettings: {"ina_settings", nil, []actionKind{actSetSettings}},
	tableUnicast:  {"ina_unicast", []keySpec{{"job_id", 16, p4config.MatchField_EXACT}, {"bitmap", 32, p4config.MatchField_EXACT}}, []actionKind{actUnicastPort}},
}

var actionSpecs = [numActions]actionSpec{
	actIPv4Forward: {"ipv4_forward", []paramSpec{{"dst_mac", 48}, {"port", 9}}},
	actDrop:        {"drop", nil},
	actWorker:      {"ina_worker", []paramSpec{{"worker_bit", 32}, {"fan_in", 8}, {"priority_cap", 8}, {"ina_enabled", 1}}},
	actResult:      {"ina_result", []paramSpec{{"mcast_group", 16}}},
	actTransit:     {"ina_transit", nil},
	actNoAction:    {"NoAction", nil},
	actSetPS:       {"ina_set_ps", []paramSpec{{"port", 9}, {"mac", 48}, {"ip", 32}}},
	actSetSettings: {"ina_set_settings", []paramSpec{{"preempt", 1}, {"release_on_result", 1}, {"ecn_threshold", 19}, {"active_slots", 16}}},
	actUnicastPort: {"ina_unicast_port", []paramSpec{{"port", 9}}},
}

type counterKind int

const (
	counterEvents counterKind = iota
	counterJobEvents
	numCounters
)

var counterSpecs = [numCounters]struct {
	name string
	size int64
}{
	counterEvents:    {"ina_events", int64(wire.NumEvents)},
	counterJobEvents: {"ina_job_events", int64(wire.MaxJobs) * int64(wire.NumEvents)},
}

// Slot registers: the six state fields, then one register per value.
const (
	regJob = iota
	regSeq
	regPriority
	regBitmap
	regCount
	regState
	regValue0
	numRegisters = regValue0 + wire.NumValues
)

type registerSpec struct {
	name   string
	width  int32
	signed bool
}

func registerSpecOf(r int) registerSpec {
	switch r {
	case regJob:
		return registerSpec{"slot_job", 16, false}
	case regSeq:
		return registerSpec{"slot_seq", 32, false}
	case regPriority:
		return registerSpec{"slot_priority", 8, false}
	case regBitmap:
		return registerSpec{"slot_bitmap", 32, false}
	case regCount:
		return registerSpec{"slot_count", 8, false}
	case regState:
		return registerSpec{"slot_state", 8, false}
	}
	return registerSpec{fmt.Sprintf("slot_value_%d", r-regValue0), 32, false}
}

// lastName is the last dot-separated component of a P4Info name.
func lastName(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

// maxPort is the largest port number (ports are bit<9>).
const maxPort = model.MaxPort

const (
	exactMatch = p4config.MatchField_EXACT
	lpmMatch   = p4config.MatchField_LPM
)
