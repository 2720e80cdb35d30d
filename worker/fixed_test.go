package worker

import (
	"math"
	"net"
	"testing"
	"time"
)

func TestToFixed(t *testing.T) {
	for _, tc := range []struct {
		x     float32
		scale float64
		want  int32
	}{
		{1.5, 1024, 1536}, {-1.5, 1024, -1536}, {1e-9, DefaultScale, 0}, {3e5, DefaultScale, math.MaxInt32},
		{-3e5, DefaultScale, math.MinInt32}, {float32(math.NaN()), 1, math.MaxInt32},
		{float32(math.Inf(-1)), 1, math.MinInt32}, {0.75, 4, 3},
	} {
		if got := toFixed(tc.x, tc.scale); got != tc.want {
			t.Errorf("toFixed(%v, %v) = %d, want %d", tc.x, tc.scale, got, tc.want)
		}
	}
	if got := fromFixed(1536, 1024); got != 1.5 {
		t.Errorf("fromFixed = %v", got)
	}
}

func TestSlotCyclesThroughWindow(t *testing.T) {
	c := Config{SlotBase: 100, Window: 8}
	seen := map[uint16]bool{}
	for q := uint32(0); q < 8; q++ {
		s := c.slot(q + 1000)
		if s < 100 || s >= 108 || seen[s] {
			t.Fatalf("seq %d -> slot %d", q+1000, s)
		}
		seen[s] = true
	}
	if c.slot(math.MaxUint32) != 100+uint16(math.MaxUint32%8) {
		t.Error("slot of the largest seq")
	}
}

func TestSynthetic(t *testing.T) {
	const n = 1000
	sum := make([]int64, n)
	SyntheticSum(3, 2, 32, 7, sum)
	got := make([]int64, n)
	r0, r1 := make([]int32, n), make([]int32, n)
	for r := range 32 {
		v := make([]int32, n)
		Synthetic(3, 2, r, 7, v)
		for i, x := range v {
			if x < -1_000_000 || x > 1_000_000 {
				t.Fatalf("rank %d value %d = %d outside [-1e6, 1e6]", r, i, x)
			}
			got[i] += int64(x)
		}
	}
	Synthetic(3, 2, 0, 7, r0)
	Synthetic(3, 2, 1, 7, r1)
	same := 0
	for i := range sum {
		if got[i] != sum[i] {
			t.Fatalf("value %d: sum of ranks %d, SyntheticSum %d", i, got[i], sum[i])
		}
		if r0[i] == r1[i] {
			same++
		}
	}
	if same > n/100 {
		t.Errorf("ranks 0 and 1 agree on %d of %d values", same, n)
	}
}

func TestMinRTOGrowsWithTheJob(t *testing.T) {
	for _, c := range []struct {
		workers     int
		maxRTO, min time.Duration
	}{{2, 0, 10 * time.Millisecond}, {8, 0, 20 * time.Millisecond}, {32, 0, 80 * time.Millisecond}, {32, 50 * time.Millisecond, 50 * time.Millisecond}} {
		cfg := Config{Job: 1, Workers: c.workers, Window: 8, MaxRTO: c.maxRTO, SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
		if err := cfg.setDefaults(); err != nil || cfg.MinRTO != c.min {
			t.Errorf("%d workers, MaxRTO %v: MinRTO %v (%v), want %v", c.workers, c.maxRTO, cfg.MinRTO, err, c.min)
		}
	}
}

func TestSyntheticWithSum(t *testing.T) {
	const n = 513
	v, sum := make([]int32, n), make([]int64, n)
	SyntheticWithSum(9, 3, 2, 5, 11, v, sum)
	wantV, wantSum := make([]int32, n), make([]int64, n)
	Synthetic(9, 3, 2, 11, wantV)
	SyntheticSum(9, 3, 5, 11, wantSum)
	for i := range v {
		if v[i] != wantV[i] || sum[i] != wantSum[i] {
			t.Fatalf("value %d: %d and sum %d, want %d and %d", i, v[i], sum[i], wantV[i], wantSum[i])
		}
	}
}
