package ps

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
)

var (
	psMAC = net.HardwareAddr{2, 0, 0, 0, 0, 0x64}
	psIP  = net.IPv4(10, 0, 0, 100)
)

func newServer(t testing.TB, jobs ...JobConfig) *Server {
	t.Helper()
	s, err := New(Config{MAC: psMAC, IP: psIP, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// data builds a data frame of job with the given bitmap, flags and every value = v, the
// integrity lane holding their checksum.
func data(job uint16, seq uint32, bitmap uint32, flags wire.Flags, v int32) []byte {
	f := wire.Frame{Addr: wire.Addr{SrcMAC: psMAC, DstMAC: psMAC, SrcIP: psIP, DstIP: psIP}, TTL: 64, SrcPort: wire.UDPPort,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: job, Seq: seq, Slot: uint16(seq % 8), Bitmap: bitmap, Flags: flags}}
	for i := range f.INA.Values {
		f.INA.Values[i] = v
	}
	f.INA.Values[wire.IntegrityLane] = wire.IntegritySum(&f.INA.Values)
	return f.Marshal()
}

// feed hands frames to s and decodes what it emits.
func feed(t *testing.T, s *Server, frames ...[]byte) []wire.Header {
	t.Helper()
	var out []wire.Header
	for _, fr := range frames {
		s.Handle(fr, func(b []byte) {
			var f wire.Frame
			if err := f.Unmarshal(b); err != nil {
				t.Fatalf("PS emitted an undecodable frame: %v", err)
			}
			if f.INA.Type != wire.TypeResult || !bytes.Equal(f.SrcMAC, psMAC) {
				t.Fatalf("PS emitted %v from %v", f.INA.Type, f.SrcMAC)
			}
			out = append(out, f.INA)
		})
	}
	return out
}

func TestMergeByBitmap(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 4, Window: 8})
	out := feed(t, s,
		data(1, 5, 0b0011, wire.FlagPreempted, 10), // switch partial of workers 0, 1
		data(1, 5, 0b0010, wire.FlagCollision, 99), // overlaps: ignored
		data(1, 5, 0b0100, wire.FlagECN|wire.FlagCollision, 1),
		data(1, 5, 0b1000, wire.FlagStale, 2),
	)
	if len(out) != 1 {
		t.Fatalf("%d results, want 1", len(out))
	}
	r := out[0]
	if r.Seq != 5 || r.Bitmap != 0b1111 || r.Values[0] != 13 || r.Values[wire.IntegrityLane-1] != 13 || r.Flags != wire.FlagECN {
		t.Errorf("result seq %d bitmap %b value %d flags %v; want 5, 1111, 13, ecn", r.Seq, r.Bitmap, r.Values[0], r.Flags)
	}
	c, _ := s.Counters(1)
	want := Counters{Preempted: 1, Collision: 2, Stale: 1, Merged: 3, Overlap: 1, Results: 1, ECNResults: 1}
	if c != want {
		t.Errorf("counters %v, want %v", c, want)
	}
	// A late duplicate is dropped; a flushed partial's RESEND (two workers' bits) is answered with
	// the kept result, byte for byte, to the group.
	var first, again []byte
	s.Handle(data(1, 6, 0b1111, 0, 1), func(b []byte) { first = slices.Clone(b) })
	feed(t, s, data(1, 6, 0b0001, wire.FlagFlushed, 1))
	s.Handle(data(1, 6, 0b0011, wire.FlagResend|wire.FlagFlushed, 1), func(b []byte) { again = slices.Clone(b) })
	if first == nil || !bytes.Equal(first, again) {
		t.Error("a late RESEND was not answered with the kept result")
	}
	c, _ = s.Counters(1)
	if c.Late != 1 || c.ResendAnswered != 1 || c.Complete != 1 || c.ResendUnicast != 0 {
		t.Errorf("late=%d resend_answered=%d complete=%d resend_unicast=%d, want 1, 1, 1, 0", c.Late, c.ResendAnswered, c.Complete, c.ResendUnicast)
	}
}

// A RESEND of one worker for a completed chunk is answered to that worker alone: the kept result
// with UNICAST and the worker's bit as the bitmap, everything else byte for byte; the kept result
// is not changed by it (a later RESEND of several workers gets it as it was).
func TestResendUnicast(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 4, Window: 8})
	var kept []byte
	s.Handle(data(1, 6, 0b1111, 0, 1), func(b []byte) { kept = slices.Clone(b) })
	for _, bit := range []uint32{0b0100, 0b0001} {
		var got []byte
		n := 0
		s.Handle(data(1, 6, bit, wire.FlagResend, 1), func(b []byte) { got = slices.Clone(b); n++ })
		if n != 1 {
			t.Fatalf("bit %b: %d answers, want 1", bit, n)
		}
		var f wire.Frame
		if err := f.Unmarshal(got); err != nil {
			t.Fatal(err)
		}
		if f.INA.Flags != wire.FlagUnicast || f.INA.Bitmap != bit || f.INA.Type != wire.TypeResult {
			t.Errorf("bit %b: answer flags %v bitmap %b, want unicast and %b", bit, f.INA.Flags, f.INA.Bitmap, bit)
		}
		want := slices.Clone(kept)
		wire.SetUnicast(want, bit)
		if !bytes.Equal(got, want) {
			t.Errorf("bit %b: the answer differs from the kept result beyond flags and bitmap", bit)
		}
	}
	var again []byte
	s.Handle(data(1, 6, 0b0110, wire.FlagResend|wire.FlagFlushed, 1), func(b []byte) { again = slices.Clone(b) })
	if !bytes.Equal(again, kept) {
		t.Error("the kept result changed after a unicast answer")
	}
	c, _ := s.Counters(1)
	if c.ResendAnswered != 3 || c.ResendUnicast != 2 {
		t.Errorf("resend_answered=%d resend_unicast=%d, want 3 and 2", c.ResendAnswered, c.ResendUnicast)
	}
}

func TestOverflowPath(t *testing.T) {
	s := newServer(t, JobConfig{Job: 2, Workers: 2, Window: 8})
	out := feed(t, s, data(2, 1, 0b01, 0, 5), data(2, 1, 0b10, wire.FlagOverflow|wire.FlagFlushed, 7))
	if len(out) != 1 || out[0].Flags != wire.FlagOverflow {
		t.Fatalf("want one OVERFLOW result, got %v", out)
	}
	// Fixed-point data for an overflowed chunk is ignored; a RESEND gets the OVERFLOW result again.
	if out := feed(t, s, data(2, 1, 0b01, 0, 5)); len(out) != 0 {
		t.Error("fixed-point data after the overflow produced a result")
	}
	if out := feed(t, s, data(2, 1, 0b01, wire.FlagResend, 5)); len(out) != 1 || out[0].Flags != wire.FlagOverflow {
		t.Errorf("RESEND on the overflow path: %v", out)
	}
	big := int32(2_000_000_000)
	out = feed(t, s, data(2, 1, 0b01, wire.FlagBypass, big), data(2, 1, 0b10, wire.FlagBypass, -big+3))
	if len(out) != 1 || out[0].Flags != wire.FlagBypass || out[0].Values[9] != 3 {
		t.Fatalf("bypass result %v", out)
	}
	// An int sum that does not fit comes back saturated and flagged.
	out = feed(t, s, data(2, 2, 0b01, wire.FlagBypass, big), data(2, 2, 0b10, wire.FlagBypass, big))
	if len(out) != 1 || out[0].Flags != wire.FlagBypass|wire.FlagOverflow || out[0].Values[0] != math.MaxInt32 {
		t.Fatalf("int overflow result %v", out)
	}
	// Float contributions are summed in float64; mixing float and int is refused.
	f := func(x float32) int32 { return int32(math.Float32bits(x)) }
	out = feed(t, s, data(2, 3, 0b01, wire.FlagBypass|wire.FlagFloat, f(1.5e9)),
		data(2, 3, 0b10, wire.FlagBypass, 1),
		data(2, 3, 0b10, wire.FlagBypass|wire.FlagFloat, f(2.5e9)))
	if len(out) != 1 || out[0].Flags != wire.FlagBypass|wire.FlagFloat || math.Float32frombits(uint32(out[0].Values[0])) != 4e9 {
		t.Fatalf("float result %v", out)
	}
	// A fixed-point sum at an int32 bound may have been clipped: it takes the exact path.
	out = feed(t, s, data(2, 4, 0b01, 0, math.MaxInt32), data(2, 4, 0b10, 0, 0))
	if len(out) != 1 || out[0].Flags != wire.FlagOverflow {
		t.Fatalf("sum at the bound: %v", out)
	}
	c, _ := s.Counters(2)
	if c.OverflowResults != 2 || c.BypassResults != 3 || c.IntOverflow != 1 || c.FloatMismatch != 1 || c.OverflowIgnored != 1 {
		t.Errorf("counters %v", c)
	}
}

func TestHostileInput(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 2, Window: 4})
	good := data(1, 1, 0b01, 0, 1)
	result := append([]byte(nil), good...)
	result[42] = wire.Version<<4 | uint8(wire.TypeResult)
	badVersion := append([]byte(nil), good...)
	badVersion[42] = 7<<4 | 1
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	for _, fr := range [][]byte{nil, good[:41], good[:200], append(append([]byte(nil), good...), 0), arp, result, badVersion,
		data(9, 1, 1, 0, 1), data(1, 1, 0, 0, 1), data(1, 1, 0b100, 0, 1)} {
		if out := feed(t, s, fr); len(out) != 0 {
			t.Errorf("hostile frame produced %d results", len(out))
		}
	}
	g := s.Global()
	c, _ := s.Counters(1)
	if g.Malformed != 5 || g.NotINA != 1 || g.NotData != 1 || g.UnknownJob != 1 || c.BadBitmap != 2 {
		t.Errorf("global %+v, job %v", g, c)
	}
}

func TestBoundedMemory(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 2, Window: 4}) // horizon 64
	for q := range uint32(200) {
		feed(t, s, data(1, q, 0b01, 0, 1), data(1, q, 0b10, 0, 1))
	}
	if p, k := s.Pending(1); p != 0 || k != 64 {
		t.Errorf("pending %d kept %d, want 0 and 64", p, k)
	}
	// Older than the horizon: no result to answer with, and no accumulator is created.
	if out := feed(t, s, data(1, 10, 0b01, wire.FlagResend, 1)); len(out) != 0 {
		t.Error("answered a chunk beyond the horizon")
	}
	if out := feed(t, s, data(1, 150, 0b01, wire.FlagResend, 1)); len(out) != 1 {
		t.Error("did not answer a chunk within the horizon")
	}
	// Incomplete chunks are capped too.
	for q := range uint32(100) {
		feed(t, s, data(1, 1000+q, 0b01, 0, 1))
	}
	c, _ := s.Counters(1)
	if p, _ := s.Pending(1); p != 64 || c.PendingFull != 36 || c.TooOld != 1 {
		t.Errorf("pending %d, counters %v", p, c)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, jc := range []JobConfig{{Job: 0, Workers: 2}, {Job: 1, Workers: 33}, {Job: 1, Workers: 2, Window: 2000},
		{Job: 1, Workers: 2, Window: 64, Horizon: 10}} {
		if _, err := New(Config{MAC: psMAC, IP: psIP, Jobs: []JobConfig{jc}}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", jc, err)
		}
	}
	s := newServer(t, JobConfig{Job: 1, Workers: 2})
	if err := s.AddJob(JobConfig{Job: 1, Workers: 2}); !errors.Is(err, ErrConfig) {
		t.Errorf("adding a served job: %v", err)
	}
	if !s.RemoveJob(1) || s.RemoveJob(1) {
		t.Error("RemoveJob")
	}
}

// mergeFrames are the frames of 1024 chunks of an 8-worker job, one single-worker packet each (the
// no-INA case, the PS's worst).
func mergeFrames() [][]byte {
	frames := make([][]byte, 0, 1024*8)
	for q := range uint32(1024) {
		for w := range 8 {
			frames = append(frames, data(1, q, 1<<w, 0, int32(q)))
		}
	}
	return frames
}

// cpuTime is the process's user+system CPU time: on a machine shared with other work, wall time
// per op includes waiting for a core, CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the rate in GB/s of CPU time (cpu-GB/s) to a benchmark that set its bytes per op.
func reportCPU(b *testing.B, bytesPerOp int, cpu0 time.Duration) {
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(b.N*bytesPerOp)/d.Seconds()/1e9, "cpu-GB/s")
	}
}

// ringTransport hands Serve the frames of mergeFrames from memory in batches, as a receive ring
// does, n in all, then calls done. It numbers each frame as it hands it over, so that every pass
// over the frames merges new chunks. Results are dropped.
type ringTransport struct {
	frames [][]byte
	next   int
	seq    uint32
	n      int
	done   func()
}

func (t *ringTransport) RecvBatch(_ time.Time, max int, fn func([]byte)) (int, error) {
	if t.n == 0 {
		t.done()
		return 0, transport.ErrTimeout
	}
	k := min(max, t.n)
	for range k {
		if t.next == len(t.frames) {
			t.next, t.seq = 0, t.seq+uint32(len(t.frames)/8)
		}
		f := t.frames[t.next]
		binary.BigEndian.PutUint32(f[50:], t.seq+uint32(t.next/8))
		fn(f)
		t.next++
	}
	t.n -= k
	return k, nil
}

func (t *ringTransport) Send([]byte) error                   { return nil }
func (t *ringTransport) Queue([]byte) error                  { return nil }
func (t *ringTransport) Flush() error                        { return nil }
func (t *ringTransport) Recv([]byte, time.Time) (int, error) { return 0, transport.ErrClosed }
func (t *ringTransport) Close() error                        { return nil }

// BenchmarkMerge is the PS merge throughput as Serve runs it on a ring transport: one op receives
// one packet of mergeFrames from memory (batches of 64, as the ring hands them over), decodes and
// merges it in place, and encodes a result for every 8th; bytes = values merged. BenchmarkCopy,
// over the same frames, is the reference make bench divides it by: copy() of the same values. Both
// also report GB/s per second of CPU time, the figure make bench compares.
func BenchmarkMerge(b *testing.B) { benchMerge(b, false) }

// BenchmarkMergeNoIntegrity is BenchmarkMerge without the integrity check: the check's cost.
func BenchmarkMergeNoIntegrity(b *testing.B) { benchMerge(b, true) }

func benchMerge(b *testing.B, noIntegrity bool) {
	s := newServer(b, JobConfig{Job: 1, Workers: 8, Window: wire.NumSlots, NoIntegrity: noIntegrity})
	ctx, cancel := context.WithCancel(context.Background())
	t := &ringTransport{frames: mergeFrames(), n: b.N, done: cancel}
	b.SetBytes(4 * wire.NumValues)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := s.Serve(ctx, t); err != nil {
		b.Fatal(err)
	}
	reportCPU(b, 4*wire.NumValues, cpu0)
	if c, _ := s.Counters(1); c.Merged != uint64(b.N) || c.Results != uint64(b.N/8) {
		b.Fatalf("%d packets: %v", b.N, c)
	}
}

// BenchmarkMergeHandle is BenchmarkMerge through Handle, one frame (and one lock) at a time.
func BenchmarkMergeHandle(b *testing.B) {
	s := newServer(b, JobConfig{Job: 1, Workers: 8, Window: wire.NumSlots})
	t := &ringTransport{frames: mergeFrames(), n: b.N}
	emit := func([]byte) {}
	handle := func(f []byte) { s.Handle(f, emit) }
	b.SetBytes(4 * wire.NumValues)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, 4*wire.NumValues, cpuTime())
	for t.n > 0 {
		_, _ = t.RecvBatch(time.Time{}, 1, handle)
	}
}

func BenchmarkCopy(b *testing.B) {
	frames := mergeFrames()
	var dst [4 * wire.NumValues]byte
	b.SetBytes(4 * wire.NumValues)
	b.ResetTimer()
	defer reportCPU(b, 4*wire.NumValues, cpuTime())
	next := 0
	for range b.N {
		if next == len(frames) {
			next = 0
		}
		copy(dst[:], frames[next][42+wire.HeaderLen:])
		next++
	}
}

// A packet holding every worker the PS holds and more replaces the held partial: the case of a
// preempted partial whose workers re-formed in the slot with one already counted.
func TestSupersetReplaces(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 3, Window: 8})
	out := feed(t, s,
		data(1, 1, 0b001, wire.FlagPreempted, 5), // worker 0 = 5
		data(1, 1, 0b011, wire.FlagFlushed, 12),  // workers 0+1 = 5+7
		data(1, 1, 0b110, wire.FlagFlushed, 99),  // partial overlap: ignored
		data(1, 1, 0b100, wire.FlagCollision, 1),
	)
	if len(out) != 1 || out[0].Values[0] != 13 {
		t.Fatalf("result %v, want 13", out)
	}
	if c, _ := s.Counters(1); c.Replaced != 1 || c.Overlap != 1 || c.Merged != 2 {
		t.Errorf("counters %v", c)
	}
}

// A partial sum beyond int32 whose final sum fits is exact, with no detour through the exact
// path: the int32 lanes move to int64 ones at the add that leaves int32, in any order.
func TestPartialSumBeyondInt32(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 3, Window: 8})
	vals := []int32{math.MaxInt32 - 1, 10, -20}
	for q, order := range [][]int{{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}} {
		var frames [][]byte
		for _, w := range order {
			frames = append(frames, data(1, uint32(q), 1<<w, 0, vals[w]))
		}
		out := feed(t, s, frames...)
		if len(out) != 1 || out[0].Flags != 0 || out[0].Values[0] != math.MaxInt32-11 || out[0].Values[wire.IntegrityLane-1] != math.MaxInt32-11 {
			t.Fatalf("order %v: %v, want one result of %d", order, out, math.MaxInt32-11)
		}
	}
	if c, _ := s.Counters(1); c.OverflowResults != 0 || c.Results != 4 {
		t.Errorf("counters %v", c)
	}
}

// HandleBatch is Handle of each frame in order: the same results and counters.
func TestHandleBatchIsHandleInTurn(t *testing.T) {
	frames := [][]byte{data(1, 5, 0b0011, 0, 10), data(1, 5, 0b0100, 0, 1), data(1, 6, 0b1111, 0, 2),
		data(1, 5, 0b1000, 0, 2), data(1, 5, 0b0001, wire.FlagResend, 10), data(9, 1, 1, 0, 1)}
	one := newServer(t, JobConfig{Job: 1, Workers: 4, Window: 8})
	var want [][]byte
	for _, f := range frames {
		one.Handle(f, func(b []byte) { want = append(want, bytes.Clone(b)) })
	}
	batch := newServer(t, JobConfig{Job: 1, Workers: 4, Window: 8})
	var got [][]byte
	batch.HandleBatch(frames, func(b []byte) { got = append(got, bytes.Clone(b)) })
	if len(got) != 3 || len(got) != len(want) {
		t.Fatalf("%d results in a batch, %d one by one; want 3", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i][wire.FrameLen-4*wire.NumValues:], want[i][wire.FrameLen-4*wire.NumValues:]) {
			t.Errorf("result %d differs", i)
		}
	}
	c1, _ := one.Counters(1)
	c2, _ := batch.Counters(1)
	if c1 != c2 || one.Global() != batch.Global() {
		t.Errorf("counters %+v / %+v, global %+v / %+v", c1, c2, one.Global(), batch.Global())
	}
}
