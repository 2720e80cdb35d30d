package worker

import "math"

// DefaultScale is the fixed-point scale for float32 tensors when the caller gives none: x is sent
// as round(x * 2^20), so one value is exact to 2^-21 and sums up to about ±2048 per value fit.
const DefaultScale = 1 << 20

// toFixed converts x to fixed point with the given scale. Values that do not fit (and NaN, Inf)
// become the int32 bounds; the PS treats a sum at a bound as overflowed, so such a chunk always
// takes the exact float path instead of being clipped.
func toFixed(x float32, scale float64) int32 {
	v := math.Round(float64(x) * scale)
	switch {
	case v != v || v >= math.MaxInt32:
		return math.MaxInt32
	case v <= math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}

// fromFixed converts a fixed-point sum back to float32.
func fromFixed(v int32, scale float64) float32 { return float32(float64(v) / scale) }
