//go:build !purego

package worker

import (
	"math"
	"testing"
)

// TestPow2Scale32 checks the exponent read from the bits against math.Frexp's.
func TestPow2Scale32(t *testing.T) {
	r := [2]int{-5, 7}
	cases := []float64{0, math.Copysign(0, -1), 1, 2, -2, 3, 0.5, 1.0 / 32, 1.0 / 64, 128, 256, 96, math.Inf(1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, math.MaxFloat64, math.Nextafter(2, 3), math.Nextafter(2, 1)}
	for _, s := range cases {
		frac, exp := math.Frexp(s)
		want := frac == 0.5 && exp-1 >= r[0] && exp-1 <= r[1]
		if got := pow2Scale32(s, r); got != want {
			t.Errorf("pow2Scale32(%v, %v) = %v, want %v", s, r, got, want)
		}
	}
}
