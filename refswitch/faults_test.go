package refswitch

import (
	"slices"
	"testing"
	"time"
)

// runFaults passes n numbered packets through an injector and returns the numbers sent, in order.
func runFaults(cfg FaultConfig, port uint16, n int) ([]int, *portCounters) {
	st := &portCounters{}
	in := newInjector(cfg, port, st)
	var out []int
	for i := range n {
		sent, n := in.apply([]byte{byte(i >> 8), byte(i)})
		for _, f := range sent[:n] {
			out = append(out, int(f[0])<<8|int(f[1]))
		}
	}
	if f := in.flush(); f != nil {
		out = append(out, int(f[0])<<8|int(f[1]))
	}
	return out, st
}

func TestFaultInjectionIsSeeded(t *testing.T) {
	cfg := FaultConfig{Loss: 0.1, Dup: 0.05, Reorder: 0.05, Seed: 42}
	a, sa := runFaults(cfg, 1, 10000)
	b, sb := runFaults(cfg, 1, 10000)
	if !slices.Equal(a, b) || sa.FaultLost.Load() != sb.FaultLost.Load() {
		t.Fatal("same seed, same packets: different faults")
	}
	c, _ := runFaults(FaultConfig{Loss: 0.1, Dup: 0.05, Reorder: 0.05, Seed: 43}, 1, 10000)
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same faults")
	}
	d, _ := runFaults(cfg, 2, 10000)
	if slices.Equal(a, d) {
		t.Fatal("ports 1 and 2 share their fault sequence")
	}
	// The rates are what was asked for (bounds are wide; the draw is fixed by the seed).
	lost, dup, reo := sa.FaultLost.Load(), sa.FaultDuplicated.Load(), sa.FaultReordered.Load()
	if lost < 900 || lost > 1100 || dup < 400 || dup > 600 || reo < 350 || reo > 600 {
		t.Fatalf("lost %d dup %d reordered %d of 10000", lost, dup, reo)
	}
	if len(a) != 10000-int(lost)+int(dup) {
		t.Fatalf("%d packets out, want %d", len(a), 10000-int(lost)+int(dup))
	}
	inversions := 0
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatal("no packet was reordered")
	}
}

func TestNoFaultsIsIdentity(t *testing.T) {
	got, _ := runFaults(FaultConfig{Seed: 7}, 0, 100)
	for i, v := range got {
		if v != i {
			t.Fatalf("packet %d came out as %d", i, v)
		}
	}
}

func TestReorderSwapsWithNext(t *testing.T) {
	in := newInjector(FaultConfig{Reorder: 1}, 0, &portCounters{})
	if out, n := in.apply([]byte{1}); n != 0 {
		t.Fatalf("first packet not held: %v", out[:n])
	}
	out, n := in.apply([]byte{2})
	if n != 2 || out[0][0] != 2 || out[1][0] != 1 {
		t.Fatalf("want 2 then 1, got %v", out[:n])
	}
}

func TestShaperPacesToRate(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	s := newShaper(8) // 8 Mbit/s = 1 MB/s
	s.now, s.last = func() time.Time { return now }, now
	s.sleep = func(d time.Duration) { slept += d; now = now.Add(d) }
	for range 1000 {
		s.wait(1000)
	}
	// 1 MB at 1 MB/s, less the initial burst.
	want := time.Second - time.Duration(shaperBurst)*time.Microsecond
	if slept < want-time.Millisecond || slept > want+time.Millisecond {
		t.Fatalf("slept %v for 1 MB at 1 MB/s, want %v", slept, want)
	}
}
