//go:build !purego

package worker

import (
	"math"

	"golang.org/x/sys/cpu"
)

func init() {
	if cpu.X86.HasAVX2 {
		encodeFixed, decodeFixed = encodeFixedAVX2, decodeFixedAVX2
	}
}

// encodeFixedAVX2 converts 8 values a step in the float32 kernel, the last len(x) mod 8 in one
// masked step (a padded copy and a second call cost the codec a tenth of its time), or 4 a step
// in the float64 kernel, the last len(x) mod 4 in a padded copy (a chunk of 63 values has 3).
func encodeFixedAVX2(dst []byte, x []float32, scale float64) {
	dst = dst[:4*len(x)]
	if pow2Scale32(scale, encodeRange) {
		if len(x) > 0 {
			toFixedBE8f(&dst[0], &x[0], len(x), float32(scale))
		}
		return
	}
	if n := len(x) &^ 3; n > 0 {
		toFixedBE4(&dst[0], &x[0], n, scale)
		dst, x = dst[4*n:], x[n:]
	}
	if len(x) > 0 {
		var in [4]float32
		var out [16]byte
		copy(in[:], x)
		toFixedBE4(&out[0], &in[0], 4, scale)
		copy(dst, out[:])
	}
}

// decodeFixedAVX2 divides by scale, or multiplies by its reciprocal where that is exact; the
// last values past a whole step go through the float32 kernel's masked step, or a padded copy.
func decodeFixedAVX2(dst []float32, src []byte, scale float64) {
	src = src[:4*len(dst)]
	if pow2Scale32(scale, decodeRange) {
		if len(dst) > 0 {
			fromFixedBE8f(&dst[0], &src[0], len(dst), float32(1/scale))
		}
		return
	}
	mul := exactReciprocal(scale)
	if n := len(dst) &^ 3; n > 0 {
		fromFixedBE4(&dst[0], &src[0], n, scale, mul)
		dst, src = dst[n:], src[4*n:]
	}
	if len(dst) > 0 {
		var in [16]byte
		var out [4]float32
		copy(in[:], src)
		fromFixedBE4(&out[0], &in[0], 4, scale, mul)
		copy(dst, out[:])
	}
}

// fromFixedBE4 is a direct call of one kernel (a kernel in a variable would move the padded
// arrays to the heap).
func fromFixedBE4(dst *float32, src *byte, n int, scale float64, mul bool) {
	if mul {
		fromFixedBE4Mul(dst, src, n, 1/scale)
	} else {
		fromFixedBE4Div(dst, src, n, scale)
	}
}

// The exponents k of scale = 2^k for which the float32 kernels give the float64 path's bits:
// encoding needs scale itself a normal float32; decoding needs every nonzero |v|/scale (|v| from 1
// to 2^31) a normal float32.
var (
	encodeRange = [2]int{-126, 127}
	decodeRange = [2]int{-96, 126}
)

// pow2Scale32 reports whether scale is 2^k with k in r: positive, no mantissa bits, exponent k
// (read from the bits: math.Frexp, twice a chunk, was a tenth of the codec's time; r lies within
// the normal exponents, so zero, subnormals, infinities and NaN fall outside it).
func pow2Scale32(scale float64, r [2]int) bool {
	b := math.Float64bits(scale)
	k := int(b>>52&0x7ff) - 1023
	return b&(1<<63|1<<52-1) == 0 && k >= r[0] && k <= r[1]
}

//go:noescape
func toFixedBE8f(dst *byte, x *float32, n int, scale float32)

//go:noescape
func fromFixedBE8f(dst *float32, src *byte, n int, inv float32)

//go:noescape
func toFixedBE4(dst *byte, x *float32, n int, scale float64)

//go:noescape
func fromFixedBE4Mul(dst *float32, src *byte, n int, inv float64)

//go:noescape
func fromFixedBE4Div(dst *float32, src *byte, n int, scale float64)
