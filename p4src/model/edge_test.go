package model

import (
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// A victim whose job lost its ina_ps entry while holding a slot: its partial cannot be delivered
// and is dropped, but the preemption still happens and is counted.
func TestEvictWithoutPS(t *testing.T) {
	s := setup2(t)
	must(t, s.SetPS(2, PSEntry{Port: 6}))
	must(t, s.SetJob(JobKey{2, 3, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1, FanIn: 2, PriorityCap: 7, INAEnabled: true}))
	s.Process(1, frame(1, 0, 1, 1)) // job 1 claims slot 0 at priority 0
	s.DeletePS(1)
	f := frame(2, 0, 1, 2)
	f[offPrio] = 5
	if out := s.Process(3, f); len(out) != 0 {
		t.Fatalf("an undeliverable partial was emitted: %d packets", len(out))
	}
	if sl := s.Slot(0); sl.Job != 2 || sl.Priority != 5 || sl.Values[0] != 2 {
		t.Errorf("slot after preemption: job %d prio %d v %d", sl.Job, sl.Priority, sl.Values[0])
	}
	if s.JobEvents(2)[wire.EventPreempted].Packets != 1 || s.JobEvents(1)[wire.EventEvicted].Packets != 1 ||
		s.Events()[wire.EventEvicted].Packets != 0 {
		t.Error("preemption counters")
	}
	if s.Events()[wire.EventDropUnknownJob].Packets != 1 || s.JobEvents(1)[wire.EventDropUnknownJob].Packets != 0 {
		t.Error("the dropped partial is not counted drop_unknown_job (in ina_events only)")
	}
}

// Values the P4 table accepts (any 8-bit fan_in, group 0) are accepted: docs/protocol.md says
// what they do, and the conformance vectors install them.
func TestTableAcceptsWhatP4Accepts(t *testing.T) {
	s := New()
	must(t, s.SetJob(JobKey{1, 1, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1, FanIn: 0}))
	must(t, s.SetJob(JobKey{1, 2, 0}, JobEntry{Role: RoleWorker, WorkerBit: 2, FanIn: 255}))
	must(t, s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: RoleResult, McastGroup: 0}))
}

// A result whose group has no replicas is counted and emits nothing; in ATP mode a result for an
// out-of-range slot frees nothing.
func TestResultEdges(t *testing.T) {
	s := setup2(t)
	s.SetSettings(Settings{Preempt: true, ReleaseOnResult: true, ECNThreshold: wire.MaxECNThreshold, ActiveSlots: 2})
	must(t, s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: RoleResult, McastGroup: 9}))
	s.Process(1, frame(1, 1, 4, 1))
	r := frame(1, 1+wire.NumSlots, 4, 0)
	r[offINA] = wire.Version<<4 | uint8(wire.TypeResult)
	if out := s.Process(7, r); len(out) != 0 {
		t.Errorf("result to an empty group emitted %d packets", len(out))
	}
	if s.Slot(1).Free() {
		t.Error("a result for slot 1025 freed slot 1")
	}
	r[offSlot], r[offSlot+1] = 0, 1
	s.Process(7, r)
	if !s.Slot(1).Free() || s.JobEvents(1)[wire.EventResult].Packets != 2 {
		t.Error("ATP result did not free its slot, or was not counted")
	}
}

func TestIPv4ForwardRewrites(t *testing.T) {
	s := New()
	must(t, s.SetRoute(Route{Prefix: mustPrefix("10.0.0.0/8"), Port: 4, DstMAC: [6]byte{2, 0, 0, 0, 0, 4}}))
	in := frame(1, 0, 0, 0)
	in[offUDPDport] = 0 // UDP port 47000 -> 0x00 0x98: not INA
	in[0] = 0xaa
	copy(in[offIPDst:], []byte{10, 1, 2, 3})
	in[offUDPCsum] = 0x12
	deparse(in, false) // a valid IPv4 checksum for the new destination
	out := s.Process(1, in)
	if len(out) != 1 || out[0].Port != 4 {
		t.Fatalf("outputs %v", out)
	}
	f := out[0].Frame
	if f[6] != 0xaa || f[0] != 2 || f[5] != 4 || f[offIPTTL] != 63 || wire.IPv4Checksum(f[14:34]) != 0 {
		t.Errorf("rewrite: % x", f[:34])
	}
	if f[offUDPCsum] != in[offUDPCsum] {
		t.Error("ordinary UDP checksum changed")
	}
}
