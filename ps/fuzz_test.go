package ps

import (
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// FuzzHandle: no frame makes the PS panic, emit something that is not a result of a served job, or
// hold more state than its horizon allows. Each input is a sequence of frames (2-byte length
// prefixes), so the fuzzer can reach merges, overflows and resends.
func FuzzHandle(f *testing.F) {
	seq := func(frames ...[]byte) []byte {
		var b []byte
		for _, fr := range frames {
			b = append(b, byte(len(fr)>>8), byte(len(fr)))
			b = append(b, fr...)
		}
		return b
	}
	f.Add(seq(data(1, 1, 0b01, 0, 1), data(1, 1, 0b10, 0, 2)))
	f.Add(seq(data(1, 2, 0b01, wire.FlagOverflow, 1), data(1, 2, 0b11, wire.FlagBypass|wire.FlagFloat, 3),
		data(1, 2, 0b01, wire.FlagResend, 1)))
	f.Add(seq(data(1, 3, 0b11, 0, 1<<30), data(1, 3, 0b01, wire.FlagResend, 0)))
	f.Add([]byte{0, 5, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := newServer(t, JobConfig{Job: 1, Workers: 2, Window: 4}) // horizon 64
		for len(in) >= 2 {
			n := min(int(in[0])<<8|int(in[1]), len(in)-2)
			fr := in[2 : 2+n]
			in = in[2+n:]
			s.Handle(fr, func(b []byte) {
				var f wire.Frame
				if err := f.Unmarshal(b); err != nil || f.INA.Type != wire.TypeResult || f.INA.Job != 1 {
					t.Fatalf("emitted %x (%v)", b, err)
				}
			})
		}
		if p, k := s.Pending(1); p > 64 || k > 64 {
			t.Fatalf("pending %d kept %d beyond the horizon 64", p, k)
		}
		// Every data packet of the job counts exactly one kind and one disposition.
		g := s.Global()
		c, _ := s.Counters(1)
		data := g.Frames - g.NotINA - g.Malformed - g.NotData - g.UnknownJob
		kinds := c.Complete + c.Partial + c.Collision + c.Preempted + c.Stale + c.Flushed + c.Bypass + c.Resend
		outcomes := c.Merged + c.Replaced + c.Overlap + c.Late + c.TooOld + c.ResendAnswered + c.OverflowIgnored +
			c.BadBitmap + c.PendingFull + c.FloatMismatch + c.Corrupt
		if kinds != data || outcomes != data {
			t.Fatalf("%d data packets counted %d kinds and %d dispositions: %v", data, kinds, outcomes, c)
		}
	})
}
