package model

import (
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

var (
	psMAC = [6]byte{0, 0, 0, 0, 0, 0x64}
	psIP  = [4]byte{10, 0, 0, 100}
)

// setup2 is job 1 with workers on ports 1 and 2 (ranks 0, 1), fan-in 2, PS on port 7.
func setup2(t testing.TB) *Switch {
	s := New()
	must(t, s.SetPS(1, PSEntry{Port: 7, MAC: psMAC, IP: psIP}))
	must(t, s.SetJob(JobKey{1, 1, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1, FanIn: 2, PriorityCap: 7, INAEnabled: true}))
	must(t, s.SetJob(JobKey{1, 2, 0}, JobEntry{Role: RoleWorker, WorkerBit: 2, FanIn: 2, PriorityCap: 7, INAEnabled: true}))
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func frame(job uint16, slot uint16, seq uint32, v int32) []byte {
	f := wire.Frame{TTL: 64, SrcPort: wire.UDPPort,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: job, Slot: slot, Seq: seq}}
	for i := range f.INA.Values {
		f.INA.Values[i] = v
	}
	return f.Marshal()
}

func TestTableValidation(t *testing.T) {
	s := New()
	w := JobEntry{Role: RoleWorker, WorkerBit: 4, FanIn: 2, INAEnabled: true}
	bad := []struct {
		name string
		err  error
	}{
		{"job 0", s.SetJob(JobKey{0, 1, 0}, w)},
		{"job MaxJobs", s.SetJob(JobKey{wire.MaxJobs, 1, 0}, w)},
		{"port 512", s.SetJob(JobKey{1, 512, 0}, w)},
		{"two worker bits", s.SetJob(JobKey{1, 1, 0}, JobEntry{Role: RoleWorker, WorkerBit: 3, FanIn: 2})},
		{"no worker bit", s.SetJob(JobKey{1, 1, 0}, JobEntry{Role: RoleWorker, FanIn: 2})},
		{"unknown role", s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: 9})},
		{"ps job 0", s.SetPS(0, PSEntry{Port: 1})},
		{"ps port 600", s.SetPS(1, PSEntry{Port: 600})},
		{"route v6", s.SetRoute(Route{Prefix: netip.MustParsePrefix("::/0"), Port: 1})},
		{"route zero", s.SetRoute(Route{Port: 1})},
		{"route port", s.SetRoute(Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 512})},
		{"group 0", s.SetMcastGroup(0, []uint16{1})},
		{"group port", s.SetMcastGroup(1, []uint16{1, 512})},
		{"group dup", s.SetMcastGroup(1, []uint16{1, 1})},
		{"slot -1", s.SetSlot(-1, Slot{})},
		{"slot NumSlots", s.ClearSlot(wire.NumSlots)},
	}
	for _, b := range bad {
		if !errors.Is(b.err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", b.name, b.err)
		}
	}
	if len(s.Jobs()) != 0 || len(s.AllPS()) != 0 || len(s.Routes()) != 0 || len(s.McastGroups()) != 0 {
		t.Error("a rejected write changed a table")
	}
	if st := (Settings{ECNThreshold: wire.MaxECNThreshold + 1}); !errors.Is(st.Validate(), ErrInvalid) {
		t.Errorf("settings %+v validated", st)
	}
	if err := DefaultSettings().Validate(); err != nil {
		t.Error(err)
	}
}

func TestTablesReadBack(t *testing.T) {
	s := setup2(t)
	if e, ok := s.Job(JobKey{1, 2, 0}); !ok || e.WorkerBit != 2 {
		t.Errorf("Job: %+v %v", e, ok)
	}
	if !s.DeleteJob(JobKey{1, 2, 0}) || s.DeleteJob(JobKey{1, 2, 0}) {
		t.Error("DeleteJob")
	}
	if p, ok := s.PS(1); !ok || p.Port != 7 {
		t.Errorf("PS: %+v %v", p, ok)
	}
	if !s.DeletePS(1) || s.DeletePS(1) || s.DeletePS(wire.MaxJobs) {
		t.Error("DeletePS")
	}
	must(t, s.SetRoute(Route{Prefix: netip.MustParsePrefix("10.0.0.7/8"), Port: 1}))
	must(t, s.SetRoute(Route{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 2}))
	must(t, s.SetRoute(Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 3})) // modify
	rs := s.Routes()
	if len(rs) != 2 || rs[0].Prefix.Bits() != 16 || rs[1].Port != 3 || rs[1].Prefix.String() != "10.0.0.0/8" {
		t.Errorf("routes: %+v", rs)
	}
	if !s.DeleteRoute(netip.MustParsePrefix("10.1.2.3/16")) || len(s.Routes()) != 1 {
		t.Error("DeleteRoute of a masked prefix")
	}
	ports := []uint16{3, 1}
	must(t, s.SetMcastGroup(5, ports))
	ports[0] = 9 // the switch keeps its own copy
	if g := s.McastGroups()[5]; len(g) != 2 || g[0] != 3 {
		t.Errorf("group: %v", g)
	}
	if !s.DeleteMcastGroup(5) || s.DeleteMcastGroup(5) {
		t.Error("DeleteMcastGroup")
	}
}

func TestSettingsClamped(t *testing.T) {
	s := New()
	if s.Settings() != DefaultSettings() {
		t.Errorf("initial settings %+v", s.Settings())
	}
	// The threshold is clamped to its 19 bits; active_slots is kept as written (it fits its 16
	// bits) and acts as NumSlots: the last slot works, and nothing past it is touched.
	s.SetSettings(Settings{ECNThreshold: 1 << 30, ActiveSlots: 60000})
	if st := s.Settings(); st.ECNThreshold != wire.MaxECNThreshold || st.ActiveSlots != 60000 {
		t.Errorf("settings %+v", st)
	}
	must(t, s.SetPS(1, PSEntry{Port: 7}))
	must(t, s.SetJob(JobKey{1, 1, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1, FanIn: 2, INAEnabled: true}))
	s.Process(1, frame(1, wire.NumSlots-1, 1, 1))
	s.Process(1, frame(1, wire.NumSlots, 1, 1))
	if ev := s.JobEvents(1); ev[wire.EventClaimed].Packets != 1 || ev[wire.EventDropSlotRange].Packets != 1 {
		t.Errorf("events %+v", ev)
	}
}

func TestSlotsAndReset(t *testing.T) {
	s := setup2(t)
	if out := s.Process(1, frame(1, 3, 9, 5)); len(out) != 0 {
		t.Fatalf("claim emitted %d packets", len(out))
	}
	sl := s.Slot(3)
	if sl.Job != 1 || sl.Seq != 9 || sl.Bitmap != 1 || sl.Count != 1 || sl.Values[63] != 5 {
		t.Errorf("slot after claim: %+v", sl)
	}
	must(t, s.SetSlot(4, Slot{Job: 1, Count: 1}))
	must(t, s.SetSlot(5, Slot{Job: 2, Count: 1}))
	must(t, s.SetSlot(6, Slot{Job: 1})) // free: not counted
	if n := s.ClearJobSlots(1); n != 2 {
		t.Errorf("ClearJobSlots cleared %d, want 2", n)
	}
	if !s.Slot(3).Free() || s.Slot(5).Free() {
		t.Error("ClearJobSlots cleared the wrong slots")
	}
	must(t, s.ClearSlot(5))
	if s.Slot(5) != (Slot{}) || s.Slot(-1) != (Slot{}) {
		t.Error("ClearSlot / out-of-range Slot")
	}
	if s.Events()[wire.EventClaimed].Packets != 1 || s.JobEvents(1)[wire.EventClaimed].Bytes != wire.FrameLen {
		t.Error("claim not counted")
	}
	s.SetSettings(Settings{})
	s.Reset()
	if len(s.Jobs()) != 0 || len(s.AllPS()) != 0 || s.Events()[wire.EventClaimed].Packets != 0 ||
		s.Settings() != DefaultSettings() || s.JobEvents(wire.MaxJobs) != ([wire.NumEvents]Counter{}) {
		t.Error("Reset left state behind")
	}
}

func TestQueueDepthMarksECN(t *testing.T) {
	s := setup2(t)
	s.SetSettings(Settings{Preempt: true, ECNThreshold: 100, ActiveSlots: 16})
	depth := uint32(99)
	s.QueueDepth = func(port uint16) uint32 {
		if port != 7 {
			t.Errorf("queue depth asked for port %d", port)
		}
		return depth
	}
	s.Process(1, frame(1, 0, 1, 1))
	out := s.Process(2, frame(1, 0, 1, 1))
	var f wire.Frame
	must(t, f.Unmarshal(out[0].Frame))
	if f.INA.Flags&wire.FlagECN != 0 {
		t.Error("marked below the threshold")
	}
	depth = 100
	s.Process(1, frame(1, 0, 2, 1))
	out = s.Process(2, frame(1, 0, 2, 1))
	must(t, f.Unmarshal(out[0].Frame))
	if f.INA.Flags&wire.FlagECN == 0 || s.JobEvents(1)[wire.EventECNMarked].Packets != 1 {
		t.Error("not marked at the threshold")
	}
}

// TestEmittedChecksums: every INA packet the switch emits has a valid IPv4 checksum (its
// destination was rewritten) and UDP checksum 0, even when the sender's UDP checksum was wrong.
func TestEmittedChecksums(t *testing.T) {
	s := setup2(t)
	in := frame(1, 0, 1, 1)
	in[40], in[41] = 0xbe, 0xef
	s.Process(1, in)
	out := s.Process(2, in) // rank 1 completes the chunk
	if len(out) != 1 {
		t.Fatalf("completion emitted %d packets", len(out))
	}
	if f := out[0].Frame; wire.IPv4Checksum(f[14:34]) != 0 || f[40] != 0 || f[41] != 0 {
		t.Errorf("checksums: ip %x udp %x", f[24:26], f[40:42])
	}
}

// TestMalformedDropsAreCountedNotPanics feeds every prefix of a valid frame.
func TestMalformedDropsAreCountedNotPanics(t *testing.T) {
	s := setup2(t)
	f := frame(1, 0, 1, 1)
	for n := 0; n < len(f); n++ {
		if out := s.Process(1, f[:n]); len(out) != 0 {
			t.Fatalf("a %d-byte prefix was forwarded", n)
		}
	}
	ev := s.Events()
	if got := ev[wire.EventDropMalformed].Packets + ev[wire.EventIPv4Dropped].Packets; got != uint64(len(f)-14) {
		t.Errorf("%d drops counted for %d IPv4 prefixes", got, len(f)-14)
	}
	if !s.Slot(0).Free() {
		t.Error("a malformed packet touched a slot")
	}
}

func TestConcurrentProcess(t *testing.T) {
	s := setup2(t)
	var wg sync.WaitGroup
	for w := uint16(1); w <= 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint32(0); seq < 200; seq++ {
				s.Process(w, frame(1, uint16(seq%8), seq, 1))
				_ = s.Events()
			}
		}()
	}
	wg.Wait()
	ev := s.Events()
	total := ev[wire.EventClaimed].Packets + ev[wire.EventCompleted].Packets + ev[wire.EventStale].Packets +
		ev[wire.EventCollision].Packets + ev[wire.EventAggregated].Packets
	if total != 400 {
		t.Errorf("%d outcomes counted for 400 packets: %v", total, ev)
	}
}

func TestPerPacketAllocations(t *testing.T) {
	s := setup2(t)
	claim, complete := frame(1, 0, 1, 1), frame(1, 0, 1, 2)
	a := testing.AllocsPerRun(100, func() {
		s.Process(1, claim)
		s.Process(2, complete)
	})
	if a > 2 { // the output slice and the output frame of the completion
		t.Errorf("%v allocations per claim+complete, want <= 2", a)
	}
}

func FuzzProcess(f *testing.F) {
	f.Add(uint16(1), frame(1, 0, 1, 1))
	f.Add(uint16(7), frame(1, 0, 1, 1)[:50])
	f.Fuzz(func(t *testing.T, port uint16, data []byte) {
		s := setup2(t)
		must(t, s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: RoleResult, McastGroup: 1}))
		must(t, s.SetMcastGroup(1, []uint16{1, 2}))
		must(t, s.SetRoute(Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 3}))
		in := append([]byte{}, data...)
		for _, o := range s.Process(port, data) {
			if len(o.Frame) < 34 || wire.IPv4Checksum(o.Frame[14:34]) != 0 && o.Frame[14]&0x0f == 5 {
				t.Fatalf("emitted a frame with a bad IPv4 checksum: %x", o.Frame)
			}
		}
		if string(in) != string(data) {
			t.Fatal("Process modified its input")
		}
	})
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
