package model

import (
	"encoding/binary"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// FuzzPackets drives the data path with sequences of well-formed INA frames whose header fields
// come from the fuzzer (9 bytes a packet: port selector, version/type, priority, flags, job, slot,
// seq), on two jobs that share 4 slots with preemption. Raw-byte fuzzing (FuzzProcess) rarely gets
// past validation; this one reaches claims, takeovers, flushes and evictions. It checks what
// docs/protocol.md promises whatever arrives: no panic, every INA packet counts exactly one event
// in ina_events besides overflow and ecn_marked, every emitted frame is a decodable INA frame
// (data carrying only defined flags), and no slot holds a bit outside its job's workers.
func FuzzPackets(f *testing.F) {
	pkt := func(port, typ, prio byte, flags wire.Flags, job uint16, slot uint16, seq byte) []byte {
		return []byte{port, typ, prio, byte(flags >> 8), byte(flags), byte(job), byte(slot), 0, seq}
	}
	data := byte(wire.Version<<4 | uint8(wire.TypeData))
	f.Add(append(pkt(0, data, 1, 0, 1, 0, 1), pkt(1, data, 1, 0, 1, 0, 1)...))
	f.Add(append(append(pkt(0, data, 1, 0, 1, 0, 1), pkt(2, data, 9, 0, 2, 0, 5)...), pkt(1, data, 1, wire.FlagResend, 1, 0, 1)...))
	f.Add(append(pkt(0, data, 1, 0, 1, 1, 1), pkt(0, data, 1, 0, 1, 1, 9)...))
	f.Add(pkt(4, byte(wire.Version<<4|uint8(wire.TypeResult)), 0, 0, 1, 0, 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := New()
		s.SetSettings(Settings{Preempt: true, ECNThreshold: wire.MaxECNThreshold, ActiveSlots: 4})
		ports := []uint16{1, 2, 3, 4, 7, 8} // job 1 ranks 0, 1; job 2 ranks 0, 1; job 1's PS; job 2's PS
		must(t, s.SetPS(1, PSEntry{Port: 7, MAC: psMAC, IP: psIP}))
		must(t, s.SetPS(2, PSEntry{Port: 8, MAC: psMAC, IP: psIP}))
		for i, p := range ports[:4] {
			job := uint16(1 + i/2)
			must(t, s.SetJob(JobKey{job, p, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1 << (i % 2), FanIn: 2,
				PriorityCap: uint8(5 * job), INAEnabled: true}))
		}
		must(t, s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: RoleResult, McastGroup: 1}))
		must(t, s.SetMcastGroup(1, []uint16{1, 2}))
		base := frame(1, 0, 0, 1<<30) // large values, so sums saturate
		for ; len(in) >= 9; in = in[9:] {
			fr := append([]byte(nil), base...)
			fr[offINA], fr[offPrio] = in[1], in[2]
			copy(fr[offFlags:], in[3:5])
			binary.BigEndian.PutUint16(fr[offJob:], uint16(in[5]%4))
			binary.BigEndian.PutUint16(fr[offSlot:], uint16(in[6]%6))
			binary.BigEndian.PutUint32(fr[offSeq:], uint32(binary.BigEndian.Uint16(in[7:9])))
			before := s.Events()
			outs := s.Process(ports[int(in[0])%len(ports)], fr)
			after := s.Events()
			var outcomes uint64
			for e := range wire.NumEvents {
				if e != wire.EventOverflow && e != wire.EventECNMarked {
					outcomes += after[e].Packets - before[e].Packets
				}
			}
			if outcomes != 1 {
				t.Fatalf("frame %x counted %d outcome events, want 1", fr[offINA:offValues], outcomes)
			}
			for _, o := range outs {
				var w wire.Frame
				if err := w.Unmarshal(o.Frame); err != nil {
					t.Fatalf("emitted an undecodable frame to port %d: %v", o.Port, err)
				}
				if w.INA.Job != 1 && w.INA.Job != 2 {
					t.Fatalf("emitted a frame of job %d", w.INA.Job)
				}
				const known = wire.FlagFloat<<1 - 1 // every flag docs/protocol.md defines
				if w.INA.Type == wire.TypeData && w.INA.Flags&^known != 0 {
					t.Fatalf("emitted data flags %#x: a worker's undefined flags got through", uint16(w.INA.Flags))
				}
			}
		}
		for i := range 4 {
			if sl := s.Slot(i); !sl.Free() && (sl.Bitmap&^3 != 0 || sl.Count > 2 || (sl.Job != 1 && sl.Job != 2)) {
				t.Fatalf("slot %d holds %+v", i, sl)
			}
		}
	})
}
