package ps

import (
	"math"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// corrupted is f with one bit of value lane 5 flipped, as the reference switch's --corrupt does.
func corrupted(f []byte) []byte {
	f[wire.FrameLen-4*wire.NumValues+4*5+2] ^= 0x10
	return f
}

// TestCorruptPacketMovesChunkToExactPath: a sum holding a corrupted packet fails the integrity
// check and is never sent; the PS asks every worker to resend the chunk with BYPASS and the sum
// completes exactly.
func TestCorruptPacketMovesChunkToExactPath(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 3, Window: 8})
	if out := feed(t, s, data(1, 4, 0b001, 0, 5)); len(out) != 0 {
		t.Fatalf("partial answered: %v", out)
	}
	out := feed(t, s, corrupted(data(1, 4, 0b110, wire.FlagCollision, 9)))
	if len(out) != 1 || out[0].Flags != wire.FlagCorrupt || out[0].Seq != 4 {
		t.Fatalf("want one CORRUPT result for seq 4, got %v", out)
	}
	// A worker that missed it and resends without BYPASS is told again.
	if out := feed(t, s, data(1, 4, 0b010, wire.FlagResend, 4)); len(out) != 1 || out[0].Flags != wire.FlagCorrupt {
		t.Fatalf("RESEND on the exact path: %v", out)
	}
	out = feed(t, s, data(1, 4, 0b001, wire.FlagBypass, 5), data(1, 4, 0b010, wire.FlagBypass, 4),
		data(1, 4, 0b100, wire.FlagBypass, 5))
	if len(out) != 1 || out[0].Flags != wire.FlagBypass || out[0].Values[0] != 14 || out[0].Values[wire.IntegrityLane-1] != 14 {
		t.Fatalf("want one BYPASS result of 14, got %v", out)
	}
	if !wire.IntegrityOKValues(&out[0].Values) {
		t.Fatal("the PS's result does not verify")
	}
	c, _ := s.Counters(1)
	if c.Corrupt != 0 || c.CorruptResults != 1 || c.Merged != 5 || c.ResendAnswered != 1 || c.BypassResults != 1 {
		t.Fatalf("counters %v", c)
	}
}

// TestCorruptBypassPacketIsDropped: on the exact path a corrupted copy is dropped alone; the
// sender's RESEND completes the chunk.
func TestCorruptBypassPacketIsDropped(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 2, Window: 8})
	f := math.Float32bits(1.5)
	out := feed(t, s, data(1, 1, 0b01, wire.FlagBypass|wire.FlagFloat, int32(f)),
		corrupted(data(1, 1, 0b10, wire.FlagBypass|wire.FlagFloat, int32(f))))
	if len(out) != 0 {
		t.Fatalf("completed with a corrupted contribution: %v", out)
	}
	out = feed(t, s, data(1, 1, 0b10, wire.FlagBypass|wire.FlagFloat|wire.FlagResend, int32(f)))
	if len(out) != 1 || math.Float32frombits(uint32(out[0].Values[0])) != 3 || !wire.IntegrityOKValues(&out[0].Values) {
		t.Fatalf("want one verified float result of 3, got %v", out)
	}
	if c, _ := s.Counters(1); c.Corrupt != 1 || c.CorruptResults != 0 || c.Merged != 2 {
		t.Fatalf("counters %v", c)
	}
}

// TestNoIntegrityMergesCorruption is why the check exists: without it the flipped bit is summed.
func TestNoIntegrityMergesCorruption(t *testing.T) {
	s := newServer(t, JobConfig{Job: 1, Workers: 2, Window: 8, NoIntegrity: true})
	out := feed(t, s, data(1, 1, 0b01, 0, 5), corrupted(data(1, 1, 0b10, 0, 9)))
	if len(out) != 1 || out[0].Flags != 0 || out[0].Values[5] == 14 || out[0].Values[4] != 14 {
		t.Fatalf("want one fixed-point result with lane 5 wrong, got %v", out)
	}
}
