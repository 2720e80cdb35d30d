package model

import (
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// benchSwitch has job 1 with 32 workers on ports 0..31 (fan-in fanIn, cap 7) and job 2 with one
// worker on port 40, so a slot can be held by another job.
func benchSwitch(b *testing.B, fanIn uint8) *Switch {
	s := New()
	must(b, s.SetPS(1, PSEntry{Port: 50, MAC: psMAC, IP: psIP}))
	must(b, s.SetPS(2, PSEntry{Port: 51, MAC: psMAC, IP: psIP}))
	for p := uint16(0); p < 32; p++ {
		must(b, s.SetJob(JobKey{1, p, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1 << p, FanIn: fanIn, PriorityCap: 7, INAEnabled: true}))
	}
	must(b, s.SetJob(JobKey{2, 40, 0}, JobEntry{Role: RoleWorker, WorkerBit: 1, FanIn: 2, PriorityCap: 7, INAEnabled: true}))
	return s
}

func withPrio(f []byte, p uint8) []byte { f[offPrio] = p; return f }

// held is slot 0 holding one contribution of (job, seq 1) at priority 0.
func held(job uint16, bit uint32) Slot {
	sl := Slot{Job: job, Seq: 1, Bitmap: bit, Count: 1}
	for i := range sl.Values {
		sl.Values[i] = int32(i)
	}
	return sl
}

// cpuTime is the process's user+system CPU time. On a loaded machine wall time per packet is
// inflated by waiting for a core; CPU time is not, so both are reported.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPerPacket(b *testing.B, packets int, cpu0 time.Duration) {
	n := float64(b.N * packets)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/packet")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/n, "cpu-ns/packet")
}

// BenchmarkAggregate: a contribution added to a partial sum (consumed, no output).
func BenchmarkAggregate(b *testing.B) {
	s := benchSwitch(b, 32)
	frames := make([][]byte, 32)
	for p := range frames {
		frames[p] = frame(1, 0, 1, int32(p))
	}
	start := held(1, 1)
	s.slots[0] = start
	p := 1
	cpu0 := cpuTime()
	for b.Loop() {
		if p == 31 { // 30 adds leave the count at 31 of 32: restart before the chunk completes
			s.slots[0], p = start, 1
		}
		if s.Process(uint16(p), frames[p]) != nil {
			b.Fatal("aggregate emitted a packet")
		}
		p++
	}
	reportPerPacket(b, 1, cpu0)
}

// benchOne processes f from port over and over, slot 0 reset to start first (if not nil); every
// packet must emit exactly one output.
func benchOne(b *testing.B, s *Switch, start *Slot, port uint16, f []byte) {
	cpu0 := cpuTime()
	for b.Loop() {
		if start != nil {
			s.slots[0] = *start
		}
		if len(s.Process(port, f)) != 1 {
			b.Fatal("the packet did not emit exactly one output")
		}
	}
	reportPerPacket(b, 1, cpu0)
}

// BenchmarkComplete: the last contribution completes the sum, which leaves for the PS.
func BenchmarkComplete(b *testing.B) {
	start := held(1, 1)
	benchOne(b, benchSwitch(b, 2), &start, 1, frame(1, 0, 1, 3))
}

// BenchmarkCollide: the slot is held by another job of equal priority; the packet goes to the PS.
func BenchmarkCollide(b *testing.B) {
	s := benchSwitch(b, 2)
	s.slots[0] = held(2, 1)
	benchOne(b, s, nil, 0, frame(1, 0, 1, 3))
}

// BenchmarkPreempt: a higher-priority job evicts the holder's partial and claims the slot.
func BenchmarkPreempt(b *testing.B) {
	victim := held(2, 1)
	benchOne(b, benchSwitch(b, 2), &victim, 0, withPrio(frame(1, 0, 1, 3), 5))
}

// BenchmarkIPv4Forward: ordinary traffic through ipv4_lpm with a handful of routes.
func BenchmarkIPv4Forward(b *testing.B) {
	s := New()
	for i, p := range []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "192.168.0.0/16"} {
		must(b, s.SetRoute(Route{Prefix: netip.MustParsePrefix(p), Port: uint16(i)}))
	}
	f := frame(1, 0, 1, 0)
	f[offUDPDport] = 0 // not INA
	copy(f[offIPDst:], []byte{10, 1, 2, 3})
	benchOne(b, s, nil, 9, f)
}
