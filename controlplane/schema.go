package controlplane

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/inapack/inapack/p4src/wire"
	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Names of the P4 entities the controller uses (docs/protocol.md). P4Info entities are matched by
// the last dot-separated component of their name, because p4c prefixes control names and the
// v1model and TNA builds use different controls.
const (
	TableIPv4LPM      = "ipv4_lpm"
	TableJob          = "ina_job"
	TablePS           = "ina_ps"
	TableSettings     = "ina_settings"
	TableUnicast      = "ina_unicast"
	ActionForward     = "ipv4_forward"
	ActionWorker      = "ina_worker"
	ActionResult      = "ina_result"
	ActionTransit     = "ina_transit"
	ActionSetPS       = "ina_set_ps"
	ActionSettings    = "ina_set_settings"
	ActionUnicastPort = "ina_unicast_port"
	CounterEvents     = "ina_events"
	CounterJobEvents  = "ina_job_events"
	RegisterSlotJob   = "slot_job"
	RegisterSlotCount = "slot_count"
	// RegisterSlotTag is the TNA build's owner register: priority | held marker | job (bits
	// 15..0), 0 while the slot is free; there slot_count keeps its value after a release.
	RegisterSlotTag = "slot_tag"
	// The TNA build counts per gress (p4src/README.md): egress counts ecn_marked in its own pair
	// (same indices), and a victim's evicted goes to ina_job_evicted[job]. Where the P4Info has
	// them, the controller adds them in, so a snapshot reads the same on every target.
	CounterEgressEvents    = "ina_egress_events"
	CounterJobEgressEvents = "ina_job_egress_events"
	CounterJobEvicted      = "ina_job_evicted"
)

// slotRegisters are reset when a job's slots are cleared; slot_count = 0 (v1model) or slot_tag = 0
// (TNA) is what frees a slot, the others are reset so a later reader sees no trace of the old owner.
var slotRegisters = []string{RegisterSlotCount, RegisterSlotJob, RegisterSlotTag, "slot_seq", "slot_priority", "slot_bitmap", "slot_state"}

// required lists, per table, its match fields and actions, and per action its parameters.
var requiredTables = map[string][]string{
	TableIPv4LPM:  {"dst_addr"},
	TableJob:      {"job_id", "ingress_port", "member"},
	TablePS:       {"job_id"},
	TableSettings: {},
}

var requiredActions = map[string][]string{
	ActionForward:  {"dst_mac", "port"},
	ActionWorker:   {"worker_bit", "fan_in", "priority_cap", "ina_enabled"},
	ActionResult:   {"mcast_group"},
	ActionTransit:  {},
	ActionSetPS:    {"port", "mac", "ip"},
	ActionSettings: {"preempt", "release_on_result", "ecn_threshold", "active_slots"},
}

// optionalTables and optionalActions are used where the P4Info has them, and then must be whole. A
// program without ina_unicast replicates every result to the job's group; the controller then
// installs no unicast entries, and the PS's unicast answers reach their worker by the group.
var optionalTables = map[string][]string{
	TableUnicast: {"job_id", "bitmap"},
}

var optionalActions = map[string][]string{
	ActionUnicastPort: {"port"},
}

// actionParams lists an action's parameters in the order the callers pass values.
func actionParams(name string) []string {
	if ps, ok := requiredActions[name]; ok {
		return ps
	}
	return optionalActions[name]
}

// Schema indexes a P4Info by short (last-component) names.
type Schema struct {
	Info      *p4config.P4Info
	tables    map[string]*p4config.Table
	actions   map[string]*p4config.Action
	counters  map[string]*p4config.Counter
	registers map[string]*p4config.Register
	tableByID map[uint32]*p4config.Table
}

// ShortName is the last dot-separated component of a P4Info name.
func ShortName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// ParseP4Info parses a P4Info in text format, ignoring fields this p4runtime version does not know
// (a current p4c emits some, e.g. initial_default_action), or in binary format. bf-p4c's TNA
// P4Info describes its counters and registers as externs whose info is a barefoot.* Any: text
// cannot be parsed without those messages' definitions, while binary keeps them as opaque bytes
// (and sends them to the switch unchanged), so a TNA switch is given ina.p4info.bin.
func ParseP4Info(b []byte) (*p4config.P4Info, error) {
	info := &p4config.P4Info{}
	terr := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, info)
	if terr == nil {
		return info, nil
	}
	info = &p4config.P4Info{}
	if !utf8.Valid(b) && proto.Unmarshal(b, info) == nil {
		return info, nil
	}
	return nil, fmt.Errorf("parse P4Info: %w (a bf-p4c TNA P4Info must be given in binary, ina.p4info.bin)", terr)
}

// Extern types of bf-p4c's TNA P4Info whose instances the controller uses as counters and
// registers. Their info is a barefoot.Counter / barefoot.Register, whose field 2 is the size.
const (
	externCounter  = "Counter"
	externRegister = "Register"
)

// externSize reads field 2 (size) of a barefoot.Counter or barefoot.Register.
func externSize(a *anypb.Any) int64 {
	b := a.GetValue()
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0
		}
		b = b[l:]
		if n == 2 && t == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(b)
			return int64(v)
		}
		if l = protowire.ConsumeFieldValue(n, t, b); l < 0 {
			return 0
		}
		b = b[l:]
	}
	return 0
}

// NewSchema indexes info and checks it has every table, field, action, parameter and counter the
// controller uses; the error names each one missing.
func NewSchema(info *p4config.P4Info) (*Schema, error) {
	s := &Schema{
		Info:      info,
		tables:    map[string]*p4config.Table{},
		actions:   map[string]*p4config.Action{},
		counters:  map[string]*p4config.Counter{},
		registers: map[string]*p4config.Register{},
		tableByID: map[uint32]*p4config.Table{},
	}
	var problems []string
	dup := func(kind, name string) {
		problems = append(problems, fmt.Sprintf("%s %q is ambiguous (two entities end in it)", kind, name))
	}
	for _, t := range info.GetTables() {
		n := ShortName(t.GetPreamble().GetName())
		if _, ok := s.tables[n]; ok {
			dup("table", n)
		}
		s.tables[n] = t
		s.tableByID[t.GetPreamble().GetId()] = t
	}
	for _, a := range info.GetActions() {
		n := ShortName(a.GetPreamble().GetName())
		if _, ok := s.actions[n]; ok && actionParams(n) != nil {
			dup("action", n)
		}
		s.actions[n] = a
	}
	for _, c := range info.GetCounters() {
		s.counters[ShortName(c.GetPreamble().GetName())] = c
	}
	for _, r := range info.GetRegisters() {
		s.registers[ShortName(r.GetPreamble().GetName())] = r
	}
	for _, e := range info.GetExterns() {
		for _, in := range e.GetInstances() {
			n, size := ShortName(in.GetPreamble().GetName()), externSize(in.GetInfo())
			switch e.GetExternTypeName() {
			case externCounter:
				s.counters[n] = &p4config.Counter{Preamble: in.GetPreamble(), Size: size}
			case externRegister:
				s.registers[n] = &p4config.Register{Preamble: in.GetPreamble(), Size: int32(size)}
			}
		}
	}
	for _, tn := range slices.Sorted(maps.Keys(requiredTables)) {
		t, ok := s.tables[tn]
		if !ok {
			problems = append(problems, fmt.Sprintf("no table %q", tn))
			continue
		}
		for _, f := range requiredTables[tn] {
			if s.field(t, f) == nil {
				problems = append(problems, fmt.Sprintf("table %q has no match field %q", tn, f))
			}
		}
	}
	for _, an := range slices.Sorted(maps.Keys(requiredActions)) {
		a, ok := s.actions[an]
		if !ok {
			problems = append(problems, fmt.Sprintf("no action %q", an))
			continue
		}
		for _, p := range requiredActions[an] {
			if param(a, p) == nil {
				problems = append(problems, fmt.Sprintf("action %q has no parameter %q", an, p))
			}
		}
	}
	for _, tn := range slices.Sorted(maps.Keys(optionalTables)) {
		t, ok := s.tables[tn]
		if !ok {
			continue
		}
		for _, f := range optionalTables[tn] {
			if s.field(t, f) == nil {
				problems = append(problems, fmt.Sprintf("table %q has no match field %q", tn, f))
			}
		}
	}
	if s.HasUnicast() {
		for _, p := range optionalActions[ActionUnicastPort] {
			if a, ok := s.actions[ActionUnicastPort]; !ok {
				problems = append(problems, fmt.Sprintf("table %q without action %q", TableUnicast, ActionUnicastPort))
				break
			} else if param(a, p) == nil {
				problems = append(problems, fmt.Sprintf("action %q has no parameter %q", ActionUnicastPort, p))
			}
		}
	}
	for _, c := range []string{CounterEvents, CounterJobEvents} {
		if _, ok := s.counters[c]; !ok {
			problems = append(problems, fmt.Sprintf("no counter %q", c))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("P4Info mismatch: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

// SchemaFromText parses a P4Info (text, or binary: ParseP4Info) and indexes it.
func SchemaFromText(text []byte) (*Schema, error) {
	info, err := ParseP4Info(text)
	if err != nil {
		return nil, err
	}
	return NewSchema(info)
}

// Marshal returns the binary P4Info as this p4runtime version knows it.
func (s *Schema) Marshal() ([]byte, error) { return proto.Marshal(s.Info) }

func (s *Schema) field(t *p4config.Table, name string) *p4config.MatchField {
	for _, f := range t.GetMatchFields() {
		if ShortName(f.GetName()) == name {
			return f
		}
	}
	return nil
}

func param(a *p4config.Action, name string) *p4config.Action_Param {
	for _, p := range a.GetParams() {
		if p.GetName() == name {
			return p
		}
	}
	return nil
}

// HasUnicast reports whether the program has the ina_unicast table (docs/protocol.md).
func (s *Schema) HasUnicast() bool { return s.tables[TableUnicast] != nil }

// ownedTables are the tables whose every entry the controller owns: an entry on the switch that the
// desired state does not have is deleted.
func (s *Schema) ownedTables() []string {
	ts := []string{TableIPv4LPM, TableJob, TablePS}
	if s.HasUnicast() {
		ts = append(ts, TableUnicast)
	}
	return ts
}

// Table returns the table with short name n.
func (s *Schema) Table(n string) *p4config.Table { return s.tables[n] }

// Action returns the action with short name n.
func (s *Schema) Action(n string) *p4config.Action { return s.actions[n] }

// Counter returns the counter with short name n.
func (s *Schema) Counter(n string) *p4config.Counter { return s.counters[n] }

// Register returns the register with short name n, or nil.
func (s *Schema) Register(n string) *p4config.Register { return s.registers[n] }

// SlotOwner names the register that says which job holds a slot: slot_job (held while
// slot_count != 0) or, on TNA, slot_tag; "" when the P4Info has neither, or lacks slot_count.
func (s *Schema) SlotOwner() string {
	if s.Register(RegisterSlotCount) == nil {
		return ""
	}
	for _, n := range []string{RegisterSlotJob, RegisterSlotTag} {
		if s.Register(n) != nil {
			return n
		}
	}
	return ""
}

// JobEventStride is the distance between two jobs' cells in ina_job_events: NUM_EVENTS on v1model
// (job * NUM_EVENTS + event), 32 on TNA (job << 5 | event, a shift instead of a multiply). The
// counter's size says which: MAX_JOBS strides.
func (s *Schema) JobEventStride() int64 {
	if st := s.Counter(CounterJobEvents).GetSize() / int64(wire.MaxJobs); st >= int64(wire.NumEvents) {
		return st
	}
	return int64(wire.NumEvents)
}

// TableName returns the short name of the table with id, or "" if unknown.
func (s *Schema) TableName(id uint32) string {
	if t := s.tableByID[id]; t != nil {
		return ShortName(t.GetPreamble().GetName())
	}
	return ""
}
