package refswitch

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"

	"github.com/inapack/inapack/p4src/wire"
)

func dataFrame(job, slot uint16, seq uint32, v0 int32) []byte {
	f := wire.Frame{
		Addr: wire.Addr{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 0xfe},
			SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 9}},
		TTL: 64, SrcPort: 40000,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: job, Slot: slot, Seq: seq},
	}
	f.INA.Values[0] = v0
	return f.Marshal()
}

// installJob sets up job 7: workers on ports 1 and 2 (fan-in 2), PS on port 3.
func installJob(t *testing.T, cl *client.Client) {
	t.Helper()
	ctx := context.Background()
	for i, port := range []uint16{1, 2} {
		if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, map[string]client.MatchInterface{
			"hdr.ina.job_id":                 &client.ExactMatch{Value: u16(7)},
			"standard_metadata.ingress_port": &client.ExactMatch{Value: u16(port)},
			"member":                         &client.ExactMatch{Value: []byte{0}},
		}, cl.NewTableActionDirect(aWorker, [][]byte{u32(1 << i), {2}, {0}, {1}}), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tPS, map[string]client.MatchInterface{"hdr.ina.job_id": &client.ExactMatch{Value: u16(7)}},
		cl.NewTableActionDirect(aSetPS, [][]byte{u16(3), {2, 0, 0, 0, 0, 9}, {10, 0, 0, 9}}), nil)); err != nil {
		t.Fatal(err)
	}
}

func TestMulticastGroups(t *testing.T) {
	sw, c, cl := pushed(t)
	ctx := context.Background()
	if err := cl.InsertMulticastGroup(ctx, 9, []uint32{1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	if got := updateCode(t, cl.InsertMulticastGroup(ctx, 9, []uint32{1})); got != codes.AlreadyExists {
		t.Fatalf("duplicate group: %v", got)
	}
	if got := updateCode(t, cl.InsertMulticastGroup(ctx, 10, []uint32{600})); got != codes.InvalidArgument {
		t.Fatalf("port 600: %v", got)
	}
	if g := sw.McastGroups()[9]; len(g) != 3 || g[2] != 4 {
		t.Fatalf("model group %v", g)
	}
	ents := readAll(t, c, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: &p4v1.PacketReplicationEngineEntry{
		Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{MulticastGroupEntry: &p4v1.MulticastGroupEntry{}}}}})
	if len(ents) != 1 || len(ents[0].GetPacketReplicationEngineEntry().GetMulticastGroupEntry().GetReplicas()) != 3 {
		t.Fatalf("PRE read %v", ents)
	}
	// Results from the PS port are replicated to the group.
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, map[string]client.MatchInterface{
		"hdr.ina.job_id":                 &client.ExactMatch{Value: u16(7)},
		"standard_metadata.ingress_port": &client.ExactMatch{Value: u16(3)},
		"member":                         &client.ExactMatch{Value: []byte{0}},
	}, cl.NewTableActionDirect(aResult, [][]byte{u16(9)}), nil)); err != nil {
		t.Fatal(err)
	}
	installJob(t, cl)
	res := dataFrame(7, 0, 1, 5)
	res[42] = wire.Version<<4 | uint8(wire.TypeResult)
	if outs := sw.Process(3, res); len(outs) != 3 {
		t.Fatalf("result replicated to %d ports", len(outs))
	}
	if err := cl.DeleteMulticastGroup(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if got := updateCode(t, cl.DeleteMulticastGroup(ctx, 9)); got != codes.NotFound {
		t.Fatalf("second delete: %v", got)
	}
}

func readAll(t *testing.T, c p4v1.P4RuntimeClient, ents ...*p4v1.Entity) []*p4v1.Entity {
	t.Helper()
	st, err := c.Read(context.Background(), &p4v1.ReadRequest{DeviceId: 1, Entities: ents})
	if err != nil {
		t.Fatal(err)
	}
	var out []*p4v1.Entity
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Entities...)
	}
}

func TestCountersAfterPackets(t *testing.T) {
	sw, c, cl := pushed(t)
	ctx := context.Background()
	installJob(t, cl)
	sw.Process(1, dataFrame(7, 4, 1, 10)) // claimed
	if outs := sw.Process(2, dataFrame(7, 4, 1, 20)); len(outs) != 1 || outs[0].Port != 3 {
		t.Fatalf("completed sum went to %v", outs)
	}
	sw.Process(1, dataFrame(8, 4, 1, 10)) // drop_unknown_job
	d, err := cl.ReadCounterEntry(ctx, "Ingress.ina_events", int64(wire.EventCompleted))
	if err != nil || d.PacketCount != 1 || d.ByteCount != wire.FrameLen {
		t.Fatalf("ina_events[completed] = %v, %v", d, err)
	}
	d, err = cl.ReadCounterEntry(ctx, "Ingress.ina_job_events", int64(wire.JobEventIndex(7, wire.EventClaimed)))
	if err != nil || d.PacketCount != 1 {
		t.Fatalf("ina_job_events[7, claimed] = %v, %v", d, err)
	}
	all, err := cl.ReadCounterEntryWildcard(ctx, "Ingress.ina_events")
	if err != nil || len(all) != int(wire.NumEvents) || all[wire.EventDropUnknownJob].PacketCount != 1 {
		t.Fatalf("wildcard ina_events: %v %v", all, err)
	}
	// Whole-device wildcard: both counters, every index.
	if n := len(readAll(t, c, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{}}})); n != int(wire.NumEvents)*(1+wire.MaxJobs) {
		t.Fatalf("wildcard read of all counters gave %d entries", n)
	}
	// Reset one counter; it counts on from zero.
	if err := cl.ModifyCounterEntry(ctx, "Ingress.ina_events", int64(wire.EventClaimed), &p4v1.CounterData{}); err != nil {
		t.Fatal(err)
	}
	sw.Process(1, dataFrame(7, 5, 2, 1))
	if d, _ := cl.ReadCounterEntry(ctx, "Ingress.ina_events", int64(wire.EventClaimed)); d.PacketCount != 1 || d.ByteCount != wire.FrameLen {
		t.Fatalf("claimed after reset and one claim: %v", d)
	}
	if sw.Events()[wire.EventClaimed].Packets != 2 {
		t.Fatal("a counter reset must not touch the model's own count")
	}
	if _, err := cl.ReadCounterEntry(ctx, "Ingress.ina_events", 22); err == nil {
		t.Fatal("index 22 of ina_events read without error")
	}
}

func TestRegisters(t *testing.T) {
	sw, c, cl := pushed(t)
	installJob(t, cl)
	sw.Process(1, dataFrame(7, 5, 42, -3))
	reg := func(name string, idx int64) *p4v1.Entity {
		id := uint32(0)
		for _, r := range testPipe(t).info.GetRegisters() {
			if lastName(r.Preamble.Name) == name {
				id = r.Preamble.Id
			}
		}
		e := &p4v1.RegisterEntry{RegisterId: id}
		if idx >= 0 {
			e.Index = &p4v1.Index{Index: idx}
		}
		return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: e}}
	}
	got := readAll(t, c, reg("slot_job", 5), reg("slot_seq", 5), reg("slot_count", 5), reg("slot_bitmap", 5), reg("slot_value_0", 5))
	want := []string{"\x07", "\x2a", "\x01", "\x01", "\xff\xff\xff\xfd"} // -3 as bit<32>
	for i, e := range got {
		if b := string(e.GetRegisterEntry().GetData().GetBitstring()); b != want[i] {
			t.Errorf("register %d read %q, want %q", i, b, want[i])
		}
	}
	if n := len(readAll(t, c, reg("slot_count", -1))); n != wire.NumSlots {
		t.Fatalf("wildcard slot_count read %d entries", n)
	}
	// Write a value, then free the slot.
	w := func(e *p4v1.Entity, data []byte) error {
		e.GetRegisterEntry().Data = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: data}}
		return cl.WriteUpdate(context.Background(), &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e})
	}
	if err := w(reg("slot_value_1", 5), []byte{0xff, 0xff, 0xff, 0x80}); err != nil { // bit<32>: -128 in two's complement
		t.Fatal(err)
	}
	if v := sw.Slot(5).Values[1]; v != -128 {
		t.Fatalf("slot_value_1[5] = %d, want -128", v)
	}
	if err := w(reg("slot_count", 5), []byte{0}); err != nil {
		t.Fatal(err)
	}
	if sw.Slot(5).Count != 0 {
		t.Fatal("slot 5 not freed")
	}
	if got := updateCode(t, w(reg("slot_count", 5), []byte{1, 0})); got != codes.InvalidArgument {
		t.Fatalf("256 into bit<8>: %v", got)
	}
	if got := updateCode(t, w(reg("slot_count", 1024), []byte{0})); got != codes.InvalidArgument {
		t.Fatalf("index 1024: %v", got)
	}
}

func testPipe(t *testing.T) *pipeline {
	t.Helper()
	p, err := bindPipeline(mustInfo(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
