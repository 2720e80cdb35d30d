package refswitch

import (
	"fmt"
	"math/bits"
)

// P4Runtime carries every integer as a big-endian byte string. The canonical form is the shortest
// string holding the value (a single zero byte for 0); readers must also accept longer strings whose
// extra leading bytes are zero, so the decoders below do.

// encodeUint is the canonical byte string of v.
func encodeUint(v uint64) []byte {
	n := (bits.Len64(v) + 7) / 8
	if n == 0 {
		return []byte{0}
	}
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// decodeUint decodes an unsigned value of the given bit width.
func decodeUint(b []byte, width int) (uint64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty byte string for a %d-bit value", width)
	}
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	if len(b) > 8 {
		return 0, fmt.Errorf("value of %d bytes does not fit in %d bits", len(b), width)
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	if bits.Len64(v) > width {
		return 0, fmt.Errorf("value %#x does not fit in %d bits", v, width)
	}
	return v, nil
}

// encodeInt32 is the canonical string of a signed value: the shortest two's complement string
// whose sign extension gives v (P4Runtime's rule for int<W>).
func encodeInt32(v int32) []byte {
	b := []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	for len(b) > 1 {
		if (b[0] == 0 && b[1]&0x80 == 0) || (b[0] == 0xff && b[1]&0x80 != 0) {
			b = b[1:]
			continue
		}
		break
	}
	return b
}

// decodeInt32 sign-extends b to 32 bits; leading bytes beyond four must be pure sign extension.
func decodeInt32(b []byte) (int32, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty byte string for a 32-bit signed value")
	}
	fill := byte(0)
	if b[0]&0x80 != 0 {
		fill = 0xff
	}
	for len(b) > 4 {
		if b[0] != fill || (b[1]&0x80 != 0) != (fill == 0xff) {
			return 0, fmt.Errorf("value of %d bytes does not fit in int<32>", len(b))
		}
		b = b[1:]
	}
	v := uint32(0)
	if fill == 0xff {
		v = ^uint32(0)
	}
	for _, c := range b {
		v = v<<8 | uint32(c)
	}
	return int32(v), nil
}
