package ps

import (
	"encoding/binary"
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

// The fixed-point merge kernels: AVX2 where the CPU has it (lanes_amd64.s), else the portable ones
// below, which read a packet's K big-endian int32 values 8 bytes (two values) at a time through
// array pointers, 8 values per loop turn, so the loops carry no bounds checks. lanes_amd64.go swaps
// in the AVX2 ones at init.
//
// With vector kernels (narrowLanes) a chunk sums in int32 lanes (narrow: half the bytes to load
// and store per packet of int64 ones) while no partial sum leaves int32; the add that would make
// one leave is undone and the chunk goes on in int64 lanes (sums: 32 workers' int32 values cannot
// overflow them), so every sum stays exact and the bounds check at the end is the one the int64
// sums always had. Scalar code tests for overflow slower than it widens, so without vector
// kernels chunks sum in int64 lanes from the start.
var (
	narrowLanes  = false
	assignNarrow = assignNarrowGeneric // s = v's values
	addNarrow    = addNarrowGeneric    // s += v's values, wrapping; false if a lane overflowed
	encodeNarrow = encodeNarrowGeneric // out = s, big-endian; false if a sum is at an int32 bound
	assignValues = assignValuesGeneric // s = v's values
	addValues    = addValuesGeneric    // s += v's values
	encodeSums   = encodeSumsGeneric   // out = s, big-endian, if every sum is strictly inside the int32 bounds
)

// packed is a packet's K values as they are on the wire.
type packed = [4 * wire.NumValues]byte

// narrow is a chunk's accumulator while its sums fit in int32.
type narrow = [wire.NumValues]int32

// sums is a chunk's accumulator after a sum left int32.
type sums = [wire.NumValues]int64

// assignNarrowGeneric sets s to v's values.
func assignNarrowGeneric(s *narrow, v *packed) {
	for i := 0; i < wire.NumValues; i += 8 {
		b := (*[32]byte)(v[4*i:])
		x0, x1 := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:])
		x2, x3 := binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[24:])
		d := (*[8]int32)(s[i:])
		d[0], d[1], d[2], d[3] = int32(x0>>32), int32(x0), int32(x1>>32), int32(x1)
		d[4], d[5], d[6], d[7] = int32(x2>>32), int32(x2), int32(x3>>32), int32(x3)
	}
}

// addNarrowGeneric adds v's values to s, wrapping, and reports whether no sum overflowed. a+x
// overflowed exactly when (a^r)&(x^r) is negative, r the wrapped sum.
func addNarrowGeneric(s *narrow, v *packed) bool {
	var ovf int32
	for i := 0; i < wire.NumValues; i += 4 {
		b := (*[16]byte)(v[4*i:])
		x0, x1 := binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:])
		d := (*[4]int32)(s[i:])
		a0, a1, a2, a3 := d[0], d[1], d[2], d[3]
		y0, y1, y2, y3 := int32(x0>>32), int32(x0), int32(x1>>32), int32(x1)
		r0, r1, r2, r3 := a0+y0, a1+y1, a2+y2, a3+y3
		ovf |= (a0^r0)&(y0^r0) | (a1^r1)&(y1^r1) | (a2^r2)&(y2^r2) | (a3^r3)&(y3^r3)
		d[0], d[1], d[2], d[3] = r0, r1, r2, r3
	}
	return ovf >= 0
}

// encodeNarrowGeneric writes s as big-endian values into out and reports whether no sum is at an
// int32 bound. A sum at a bound may be a clipped one (the switch saturates, and workers encode
// unrepresentable floats as the bounds): only the exact path can tell.
func encodeNarrowGeneric(out *packed, s *narrow) bool {
	// x+1<<31+1, wrapping, is 0 for MaxInt32, 1 for MinInt32 and above 1 for every other x.
	m := uint32(math.MaxUint32)
	for i := 0; i < wire.NumValues; i += 8 {
		d := (*[8]int32)(s[i:])
		for _, x := range d {
			m = min(m, uint32(x)+1<<31+1)
		}
		b := (*[32]byte)(out[4*i:])
		binary.BigEndian.PutUint64(b[0:], uint64(uint32(d[0]))<<32|uint64(uint32(d[1])))
		binary.BigEndian.PutUint64(b[8:], uint64(uint32(d[2]))<<32|uint64(uint32(d[3])))
		binary.BigEndian.PutUint64(b[16:], uint64(uint32(d[4]))<<32|uint64(uint32(d[5])))
		binary.BigEndian.PutUint64(b[24:], uint64(uint32(d[6]))<<32|uint64(uint32(d[7])))
	}
	return m > 1
}

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

// widen moves a narrow accumulator to int64 lanes.
func widen(w *sums, s *narrow) {
	for i, x := range s {
		w[i] = int64(x)
	}
}

// subNarrow undoes addNarrow's wrapping add of v.
func subNarrow(s *narrow, v *packed) {
	for i := range s {
		s[i] -= value(v, i)
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

// encodeSumsGeneric writes s as big-endian int32 values into out and reports whether every sum
// lies strictly between the int32 bounds (see encodeNarrowGeneric).
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
