package worker

import (
	"math"
	"testing"
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
