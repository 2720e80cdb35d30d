// Package model is an executable, deterministic model of the INA switch pipeline (docs/protocol.md).
package model

import (
	"sync"

	"github.com/inapack/inapack/p4src/wire"
)

// Settings is the ina_settings table's default action.
type Settings struct {
	Preempt         bool   // a higher-priority job may take a slot from a lower one
	ReleaseOnResult bool   // ATP mode: a complete slot is freed by the result, not at completion
	ECNThreshold    uint32 // egress marks data packets when the queue depth >= this (<= wire.MaxECNThreshold)
	ActiveSlots     uint16 // slots in use; above wire.NumSlots acts as wire.NumSlots
}

// DefaultSettings is the P4 program's initial default action: ina_set_settings(1, 0, 0x7FFFF, NUM_SLOTS).
func DefaultSettings() Settings {
	return Settings{Preempt: true, ECNThreshold: wire.MaxECNThreshold, ActiveSlots: wire.NumSlots}
}

// clamp fits the settings into their P4 field widths.
func (st Settings) clamp() Settings {
	st.ECNThreshold = min(st.ECNThreshold, wire.MaxECNThreshold)
	return st
}

// slots is the number of slots in use: ActiveSlots, of which only wire.NumSlots exist.
func (st Settings) slots() uint16 { return min(st.ActiveSlots, wire.NumSlots) }

// Output is one packet leaving the switch.
type Output struct {
	Port  uint16
	Frame []byte
}

// Counter is one entry of an indirect packets-and-bytes counter.
type Counter struct {
	Packets, Bytes uint64
}

type psSlot struct {
	PSEntry
	ok bool
}

// Switch is one switch running the INA pipeline. All methods are safe for concurrent use; packets
// are processed one at a time, in the order Process is called.
type Switch struct {
	// QueueDepth reports the egress queue depth (enq_qdepth) of a port for ECN marking; nil means 0.
	// It is called with the switch locked and must not call back into the Switch.
	QueueDepth func(port uint16) uint32
	// NewFrame, when set, returns the n-byte buffer of an emitted frame (the reference switch
	// recycles them); nil allocates. It is called with the switch locked.
	NewFrame func(n int) []byte

	mu        sync.Mutex
	settings  Settings
	jobs      map[JobKey]JobEntry
	ps        [wire.MaxJobs]psSlot
	routes    []Route // longest prefix first
	groups    map[uint16][]uint16
	unicast   map[UnicastKey]uint16
	events    [wire.NumEvents]Counter
	jobEvents [wire.MaxJobs][wire.NumEvents]Counter
	slots     [wire.NumSlots]Slot
	one       [1]Output // the single output of most packets, copied out by ProcessAppend
	multi     []Output  // a result's replicas, likewise
}

// New returns a switch in the state of a freshly pushed pipeline.
func New() *Switch {
	s := &Switch{}
	s.reset()
	return s
}

// Reset puts every table, group, counter and register back to the initial state, as a pipeline
// re-push does. QueueDepth is kept.
func (s *Switch) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Switch) reset() {
	s.settings = DefaultSettings()
	s.jobs = map[JobKey]JobEntry{}
	s.ps = [wire.MaxJobs]psSlot{}
	s.routes = nil
	s.groups = map[uint16][]uint16{}
	s.unicast = map[UnicastKey]uint16{}
	s.events = [wire.NumEvents]Counter{}
	s.jobEvents = [wire.MaxJobs][wire.NumEvents]Counter{}
	s.slots = [wire.NumSlots]Slot{}
}

// SetSettings sets the ina_settings default action. An ECNThreshold wider than its P4 field is
// clamped to wire.MaxECNThreshold (Validate reports it instead); ActiveSlots is kept as written.
func (s *Switch) SetSettings(st Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings = st.clamp()
}

// Settings returns the current settings.
func (s *Switch) Settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// Events returns the ina_events counters, indexed by wire.Event.
func (s *Switch) Events() [wire.NumEvents]Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// JobEvents returns the ina_job_events counters of one job, indexed by wire.Event.
func (s *Switch) JobEvents(job uint16) [wire.NumEvents]Counter {
	if job >= wire.MaxJobs {
		return [wire.NumEvents]Counter{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobEvents[job]
}

// noJob marks an event that has no trusted job id (counted in ina_events only).
const noJob = -1

func (s *Switch) count(job int, e wire.Event, bytes int) {
	s.events[e].Packets++
	s.events[e].Bytes += uint64(bytes)
	if job >= 0 && job < wire.MaxJobs {
		s.countJob(uint16(job), e, bytes)
	}
}

func (s *Switch) countJob(job uint16, e wire.Event, bytes int) {
	c := &s.jobEvents[job][e]
	c.Packets++
	c.Bytes += uint64(bytes)
}
