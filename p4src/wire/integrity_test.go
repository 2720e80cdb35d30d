package wire

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// pack encodes v as a packet's big-endian values.
func pack(v *[NumValues]int32) *[4 * NumValues]byte {
	var b [4 * NumValues]byte
	for i, x := range v {
		binary.BigEndian.PutUint32(b[4*i:], uint32(x))
	}
	return &b
}

// contribution is a worker's chunk of random values of every magnitude, integrity lane set.
func contribution(rng *rand.Rand, bound int64) *[NumValues]int32 {
	var v [NumValues]int32
	for i := range IntegrityWidth {
		v[i] = int32(rng.Int64N(2*bound) - bound)
	}
	v[IntegrityLane] = IntegritySum(&v)
	return &v
}

func TestIntegrityPrime(t *testing.T) {
	if !big.NewInt(IntegrityPrime).ProbablyPrime(20) {
		t.Fatalf("%d is not prime", IntegrityPrime)
	}
	// The most any switch sums for one job never reaches the saturation bound.
	if MaxWorkers*(IntegrityPrime-1) >= math.MaxInt32 {
		t.Fatalf("%d contributions of up to %d reach the int32 bound", MaxWorkers, IntegrityPrime-1)
	}
	// 2 is a primitive root: its order is p-1, so 2^d = +-1 needs d >= (p-1)/2, far above 2048:
	// no two-bit error is missed.
	p := big.NewInt(IntegrityPrime)
	n := IntegrityPrime - 1
	m, factors := n, []int{}
	for d := 2; d*d <= m; d++ {
		if m%d == 0 {
			factors = append(factors, d)
			for m%d == 0 {
				m /= d
			}
		}
	}
	if m > 1 {
		factors = append(factors, m)
	}
	for _, q := range factors {
		if new(big.Int).Exp(big.NewInt(2), big.NewInt(int64(n/q)), p).Int64() == 1 {
			t.Fatalf("2 is not a primitive root mod %d (2^((p-1)/%d) = 1)", IntegrityPrime, q)
		}
	}
}

func TestIntegrityIsLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + trial%MaxWorkers
		// Values small enough that n of them sum inside int32, as on the fixed-point path.
		bound := int64(math.MaxInt32) / int64(n)
		var sum [NumValues]int64
		for range n {
			c := contribution(rng, bound)
			if !IntegrityOK(pack(c)) {
				t.Fatal("a worker's own contribution does not verify")
			}
			for i, x := range c {
				sum[i] += int64(x)
			}
		}
		var s32 [NumValues]int32
		for i, x := range sum {
			s32[i] = int32(x)
		}
		if !IntegrityOK(pack(&s32)) || !IntegrityOKValues(&s32) {
			t.Fatalf("the sum of %d contributions does not verify", n)
		}
		if sum[IntegrityLane] >= math.MaxInt32 {
			t.Fatalf("integrity lane %d of %d contributions at the int32 bound", sum[IntegrityLane], n)
		}
	}
}

// TestIntegrityCatchesEveryOneAndTwoBitError flips every bit of a packet, then every pair of bits.
func TestIntegrityCatchesEveryOneAndTwoBitError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for k, v := range []*[NumValues]int32{contribution(rng, math.MaxInt32), contribution(rng, 100), {}} {
		b := pack(v)
		if !IntegrityOK(b) {
			t.Fatal("clean packet does not verify")
		}
		const bits = 8 * 4 * NumValues
		flip := func(x int) { b[x/8] ^= 1 << (x % 8) }
		for x := range bits {
			flip(x)
			if IntegrityOK(b) {
				t.Fatalf("bit %d flipped: not detected", x)
			}
			for y := x + 1; k == 0 && y < bits; y++ { // pairs on one packet: the check is linear
				flip(y)
				if IntegrityOK(b) {
					t.Fatalf("bits %d and %d flipped: not detected", x, y)
				}
				flip(y)
			}
			flip(x)
		}
	}
}

// TestIntegrityMissProbability counts exactly the three- and four-bit errors that go undetected.
// Flipping bits at positions x1 < ... < xn of the 2048-bit number the weights make of a packet
// changes it by s1 2^x1 + ... + sn 2^xn (signs s), missed when that is 0 mod p. Dividing by
// s1 2^x1 leaves 1 + t2 2^a2 + ... with 0 < a2 < ... < 2048: each such base relation stands for
// its 2048 - a_n shifts and both signs.
func TestIntegrityMissProbability(t *testing.T) {
	const bits = 32 * NumValues
	const p = IntegrityPrime
	pow := make([]int64, bits)
	pow[0] = 1
	for x := 1; x < bits; x++ {
		pow[x] = pow[x-1] * 2 % p
	}
	mod := func(v int64) int64 { return (v%p + p) % p }
	signs := [2]int64{1, -1}
	// one[v] is the a with 1 + t 2^a = v, t = +-1 (unique: no two-bit error is missed).
	one := map[int64]int{}
	for a := 1; a < bits; a++ {
		for _, t := range signs {
			one[mod(1+t*pow[a])] = a
		}
	}
	missed3, missed4 := 0, 0
	for b := 2; b < bits; b++ {
		for c := b + 1; c < bits; c++ {
			for _, t2 := range signs {
				for _, t3 := range signs {
					r := mod(t2*pow[b] + t3*pow[c])
					if a, ok := one[mod(-r)]; ok && a < b { // 1 + t1 2^a + t2 2^b + t3 2^c = 0
						missed4 += 2 * (bits - c)
					}
				}
			}
		}
		for _, t2 := range signs {
			for _, t3 := range signs {
				for a := 1; a < b; a++ { // 1 + t2 2^a + t3 2^b = 0
					if mod(1+t2*pow[a]+t3*pow[b]) == 0 {
						missed3 += 2 * (bits - b)
					}
				}
			}
		}
	}
	c3 := float64(bits) * (bits - 1) * (bits - 2) / 6 * 8
	c4 := float64(bits) * (bits - 1) * (bits - 2) * (bits - 3) / 24 * 16
	t.Logf("undetected: three-bit errors %d of %.3g; four-bit errors %d of %.3g = %.3g (1/p = %.3g)",
		missed3, c3, missed4, c4, float64(missed4)/c4, 1.0/p)
	if missed3 != 0 {
		t.Fatalf("%d three-bit errors go undetected", missed3)
	}
	if r := float64(missed4) / c4; r > 2.0/p {
		t.Fatalf("four-bit miss rate %.3g, above 2/p", r)
	}
	// A whole lane replaced by a random value is missed only when the change is a multiple of p.
	rng := rand.New(rand.NewPCG(5, 6))
	v := contribution(rng, math.MaxInt32)
	for range 200000 {
		w := *v
		i := rng.IntN(NumValues)
		w[i] = int32(rng.Uint32())
		d := int64(w[i]) - int64(v[i])
		if got, want := IntegrityOK(pack(&w)), d%p == 0; got != want {
			t.Fatalf("lane %d changed by %d: verified %v, want %v", i, d, got, want)
		}
	}
}

// BenchmarkIntegrityOK is the check of one packet (bytes: its values), the PS's cost per packet.
func BenchmarkIntegrityOK(b *testing.B) {
	p := pack(contribution(rand.New(rand.NewPCG(1, 1)), math.MaxInt32))
	b.SetBytes(4 * NumValues)
	for range b.N {
		if !IntegrityOK(p) {
			b.Fatal("clean packet failed")
		}
	}
}

// The kernels in use (AVX2 where the CPU has it) give the portable loops' sums, to the bit, for
// values of every magnitude, the int32 extremes included.
func TestWeightedKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for n := range 2000 {
		var v [NumValues]int32
		for i := range v {
			switch n % 4 {
			case 0:
				v[i] = int32(rng.Uint32())
			case 1:
				v[i] = []int32{math.MinInt32, math.MaxInt32, -1, 0}[rng.IntN(4)]
			case 2:
				v[i] = int32(rng.IntN(1000) - 500)
			default:
				v[i] = []int32{math.MinInt32, math.MaxInt32}[n/4%2] // every lane at one extreme
			}
		}
		if got, want := weighted(pack(&v)), weightedGeneric(pack(&v)); got != want {
			t.Fatalf("values %v: weighted %d, portable %d", v, got, want)
		}
		if got, want := weightedValues(&v), weightedValuesGeneric(&v); got != want {
			t.Fatalf("values %v: weightedValues %d, portable %d", v, got, want)
		}
	}
}

var weightedSink int64

// BenchmarkWeighted is the kernel in use against the portable loop, per packet.
func BenchmarkWeighted(b *testing.B) {
	p := pack(contribution(rand.New(rand.NewPCG(1, 1)), math.MaxInt32))
	for _, k := range []struct {
		name string
		f    func(*[4 * NumValues]byte) int64
	}{{"in-use", weighted}, {"portable", weightedGeneric}} {
		b.Run(k.name, func(b *testing.B) {
			if k.f(p)%IntegrityPrime != 0 {
				b.Fatal("clean packet failed")
			}
			b.SetBytes(4 * NumValues)
			for range b.N {
				weightedSink += k.f(p)
			}
		})
	}
}
