package ps

import (
	"encoding/binary"
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

// The fixed-point merge kernels: AVX2 where the CPU has it (lanes_amd64.s), else the portable ones
// below, which read a packet's K big-endian int32 values 8 bytes (two values) at a time through
// array pointers, 8 values per loop turn, so the loops carry no bounds checks. Sums are int64 (32
// workers' int32 values cannot overflow them). lanes_amd64.go swaps in the AVX2 ones at init.
var (
	assignValues = assignValuesGeneric // s = v's values
	addValues    = addValuesGeneric    // s += v's values
	encodeSums   = encodeSumsGeneric   // out = s, big-endian, if every sum is strictly inside the int32 bounds
)

// packed is a packet's K values as they are on the wire.
type packed = [4 * wire.NumValues]byte

// sums is a chunk's accumulator.
type sums = [wire.NumValues]int64

// assignValuesGeneric sets s to v's values.
func assignValuesGeneric(s *sums, v *packed) {
	for i := 0; i < wire.NumValues; i += 8 {
		b := (*[32]byte)(v[4*i:])
		x0, x1 := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:])
		x2, x3 := binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[24:])
		d := (*[8]int64)(s[i:])
		d[0], d[1] = int64(int32(x0>>32)), int64(int32(x0))
		d[2], d[3] = int64(int32(x1>>32)), int64(int32(x1))
		d[4], d[5] = int64(int32(x2>>32)), int64(int32(x2))
		d[6], d[7] = int64(int32(x3>>32)), int64(int32(x3))
	}
}

// addValuesGeneric adds v's values to s.
func addValuesGeneric(s *sums, v *packed) {
	for i := 0; i < wire.NumValues; i += 8 {
		b := (*[32]byte)(v[4*i:])
		x0, x1 := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:])
		x2, x3 := binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[24:])
		d := (*[8]int64)(s[i:])
		d[0] += int64(int32(x0 >> 32))
		d[1] += int64(int32(x0))
		d[2] += int64(int32(x1 >> 32))
		d[3] += int64(int32(x1))
		d[4] += int64(int32(x2 >> 32))
		d[5] += int64(int32(x2))
		d[6] += int64(int32(x3 >> 32))
		d[7] += int64(int32(x3))
	}
}

// encodeSumsGeneric writes s as big-endian int32 values into out and reports whether every sum lies strictly
// between the int32 bounds. A sum at a bound may be a clipped one (the switch saturates, and
// workers encode unrepresentable floats as the bounds): only the exact path can tell.
func encodeSumsGeneric(out *packed, s *sums) bool {
	// (x-lo)|(hi-x) is negative exactly when x lies outside [lo, hi].
	const lo, hi = math.MinInt32 + 1, math.MaxInt32 - 1
	var outside int64
	for i := 0; i < wire.NumValues; i += 8 {
		d := (*[8]int64)(s[i:])
		outside |= (d[0] - lo) | (hi - d[0]) | (d[1] - lo) | (hi - d[1]) | (d[2] - lo) | (hi - d[2]) |
			(d[3] - lo) | (hi - d[3]) | (d[4] - lo) | (hi - d[4]) | (d[5] - lo) | (hi - d[5]) |
			(d[6] - lo) | (hi - d[6]) | (d[7] - lo) | (hi - d[7])
		b := (*[32]byte)(out[4*i:])
		binary.BigEndian.PutUint64(b[0:], uint64(d[0])<<32|uint64(uint32(d[1])))
		binary.BigEndian.PutUint64(b[8:], uint64(d[2])<<32|uint64(uint32(d[3])))
		binary.BigEndian.PutUint64(b[16:], uint64(d[4])<<32|uint64(uint32(d[5])))
		binary.BigEndian.PutUint64(b[24:], uint64(d[6])<<32|uint64(uint32(d[7])))
	}
	return outside >= 0
}
