package worker

import (
	"encoding/binary"
	"math"
)

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

// encodeFixed writes toFixed of every x, big-endian, into dst (4*len(x) bytes), and decodeFixed
// fills dst with fromFixed of big-endian src: the loops below, or AVX2 kernels where the CPU has
// them (fixed_amd64.s, swapped in at init), which give the same bits for every input
// (TestFixedKernels). A chunk's values are converted in place in the frame, not through an
// int32 array and a second pass that swaps bytes.
var (
	encodeFixed = encodeFixedGeneric
	decodeFixed = decodeFixedGeneric
)

func encodeFixedGeneric(dst []byte, x []float32, scale float64) {
	dst = dst[:4*len(x)]
	for i, v := range x {
		binary.BigEndian.PutUint32(dst[4*i:], uint32(toFixed(v, scale)))
	}
}

func decodeFixedGeneric(dst []float32, src []byte, scale float64) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = fromFixed(int32(binary.BigEndian.Uint32(src[4*i:])), scale)
	}
}

// encodeInt32 and decodeInt32 move int32 values to and from big-endian bytes.
func encodeInt32(dst []byte, x []int32) {
	dst = dst[:4*len(x)]
	for i, v := range x {
		binary.BigEndian.PutUint32(dst[4*i:], uint32(v))
	}
}

func decodeInt32(dst []int32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = int32(binary.BigEndian.Uint32(src[4*i:]))
	}
}

// exactReciprocal reports whether dividing by scale is multiplying by 1/scale, bit for bit: scale
// is a power of two whose reciprocal is a normal float64 (every scale of AllReduceFloat32Scaled,
// and DefaultScale).
func exactReciprocal(scale float64) bool {
	frac, exp := math.Frexp(scale)
	return frac == 0.5 && exp > -1020 && exp < 1020
}
