package wire

import "encoding/binary"

// End-to-end integrity of values (docs/protocol.md, "Integrity"). Aggregation is linear, so a
// checksum linear in the values survives it: with integrity on, the last value lane of every
// packet (IntegrityLane) carries
//
//	c = sum over the other lanes i of v_i * 2^(32(i+1))  mod IntegrityPrime
//
// for a worker's own values. The switch adds that lane like any other, so a partial or full sum
// of n contributions carries the sum of their n checksums, which is congruent to the checksum of
// the summed values: every packet, whatever it aggregates, verifies with IntegrityOK. The weights
// read the chunk as one 2048-bit number, lane i at bit 32(i+1) and the integrity lane at bit 0, so
// a flipped bit at position x changes that number by +-2^x. IntegrityPrime is 2^26-107, chosen
// (wire/integrity_test.go) so that no sum of one, two or three signed powers 2^x, x < 2048, is a
// multiple of it: an error in up to three bit positions is always caught. Of the primes just below
// 2^26 most have that property; 2^26-5, for one, does not (2^26 = 2^2 + 2^0 mod it). Errors in
// more positions are missed with probability about 1/IntegrityPrime (2^-26).
//
// The integrity lane of one contribution lies in [0, IntegrityPrime), so 32 contributions (the
// most any switch or PS sums for one job, MaxWorkers) stay at or below 2^31-3456: the switch's
// saturating int32 add never clips it, and no P4 change is needed.
const (
	IntegrityLane  = NumValues - 1
	IntegrityPrime = 1<<26 - 107
	// IntegrityWidth is the payload values per packet when integrity is on.
	IntegrityWidth = NumValues - 1
)

// integrityWeights[i] = 2^(32(i+1)) mod IntegrityPrime is the weight of value lane i; the
// integrity lane's is -1, so a packet verifies when the weighted sum of all K lanes is 0 mod p.
var integrityWeights = func() (w [NumValues]int64) {
	x := int64(1)
	for i := range IntegrityWidth {
		x = x << 32 % IntegrityPrime // x < 2^26: no overflow
		w[i] = x
	}
	w[IntegrityLane] = -1
	return w
}()

// The weighted sums below run four accumulators over the lanes, two lanes per 8-byte load. Each
// product is below 2^31 * 2^26 in magnitude, so each accumulator's 16 stay below 2^61 and their
// total below 2^63: no overflow before the one reduction mod p.

// weighted is the weighted sum of a packet's K big-endian values, and weightedValues that of
// decoded values: the portable loops below, or AVX2 kernels where the CPU has them
// (integrity_amd64.s, swapped in at init).
var (
	weighted       = weightedGeneric
	weightedValues = weightedValuesGeneric
)

func weightedGeneric(b *[4 * NumValues]byte) int64 {
	var s0, s1, s2, s3 int64
	for i := 0; i < NumValues; i += 4 {
		q := (*[16]byte)(b[4*i:])
		w := (*[4]int64)(integrityWeights[i:])
		x, y := binary.BigEndian.Uint64(q[0:]), binary.BigEndian.Uint64(q[8:])
		s0 += int64(int32(x>>32)) * w[0]
		s1 += int64(int32(x)) * w[1]
		s2 += int64(int32(y>>32)) * w[2]
		s3 += int64(int32(y)) * w[3]
	}
	return s0 + s1 + s2 + s3
}

func weightedValuesGeneric(v *[NumValues]int32) int64 {
	var s0, s1, s2, s3 int64
	for i := 0; i < NumValues; i += 4 {
		x := (*[4]int32)(v[i:])
		w := (*[4]int64)(integrityWeights[i:])
		s0 += int64(x[0]) * w[0]
		s1 += int64(x[1]) * w[1]
		s2 += int64(x[2]) * w[2]
		s3 += int64(x[3]) * w[3]
	}
	return s0 + s1 + s2 + s3
}

// IntegritySum is the integrity lane's value for values v (their checksum, in [0, IntegrityPrime)).
// v[IntegrityLane] is ignored.
func IntegritySum(v *[NumValues]int32) int32 {
	return int32(modPrime(weightedValues(v) + int64(v[IntegrityLane])))
}

// IntegrityOK reports whether the K big-endian values of a packet, integrity lane included,
// verify: the integrity lane is congruent to the checksum of the others.
func IntegrityOK(b *[4 * NumValues]byte) bool { return weighted(b)%IntegrityPrime == 0 }

// IntegrityOKValues is IntegrityOK for decoded values.
func IntegrityOKValues(v *[NumValues]int32) bool { return weightedValues(v)%IntegrityPrime == 0 }

// SetIntegrity writes the integrity lane of K big-endian values: the checksum of the others.
func SetIntegrity(b *[4 * NumValues]byte) {
	lane := int64(int32(binary.BigEndian.Uint32(b[4*IntegrityLane:])))
	binary.BigEndian.PutUint32(b[4*IntegrityLane:], uint32(modPrime(weighted(b)+lane)))
}

// modPrime is s mod IntegrityPrime in [0, IntegrityPrime).
func modPrime(s int64) int64 {
	if s %= IntegrityPrime; s < 0 {
		s += IntegrityPrime
	}
	return s
}
