package worker

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fixedEdges are the values where rounding and clipping can go wrong: halves, the largest float64
// below a half, the int32 bounds and their neighbours, signed zeros, NaN and infinities.
func fixedEdges(scale float64) []float32 {
	var xs []float32
	for _, v := range []float64{0, 0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, -0.49999999999999994,
		math.MaxInt32, math.MaxInt32 - 0.5, math.MaxInt32 + 0.5, math.MaxInt32 - 1, math.MinInt32,
		math.MinInt32 + 0.5, math.MinInt32 - 0.5, math.MinInt32 - 1, 1e12, -1e12, 3, -3} {
		xs = append(xs, float32(v/scale), math.Nextafter32(float32(v/scale), 1e30), math.Nextafter32(float32(v/scale), -1e30))
	}
	// Small integers: with the scales just under a half below, x*scale lands just under a half.
	xs = append(xs, 1, -1, 3, -3, 5, -5)
	return append(xs, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32)
}

// The kernels in use (AVX2 where the CPU has it) give toFixed's and fromFixed's bits for every
// input: edges, random bit patterns and random values near the scale, every length from 0 to 70
// (the kernels take 4 or 8 at a time, and the rest in a padded copy or a masked step), and nothing
// written past the values, scales powers of two or not.
func TestFixedKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []float64{DefaultScale, 1024, 1, 3, 1000.7, 1 << 30, 1.0 / 1024, 0x1p-40, 0x1p40, 1e-300,
		0.49999999999999994, 0.49999999999999994 / 3, 1.4999999999999998,
		0x1p127, 0x1p126, 0x1p-126, 0x1p-127, 0x1p-96, 0x1p-97, 0x1p100} {
		xs := fixedEdges(scale)
		for range 2000 {
			xs = append(xs, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64()*2048/scale), float32(math.Round(rng.NormFloat64()*1e4)+0.5)/float32(scale))
		}
		for n := 0; n <= 70; n++ {
			x := xs[:n]
			// Past the n values, 32 bytes the kernels must leave alone (a last step is masked).
			guarded := make([]byte, 4*n+32)
			for i := range guarded {
				guarded[i] = 0xa5
			}
			got := guarded[:4*n]
			encodeFixed(got, x, scale)
			for i, g := range guarded[4*n:] {
				if g != 0xa5 {
					t.Fatalf("scale %v, n %d: encodeFixed wrote byte %d past the values", scale, n, i)
				}
			}
			want := make([]byte, 4*n)
			encodeFixedGeneric(want, x, scale)
			for i := range n {
				if g, w := got[4*i:4*i+4], want[4*i:4*i+4]; string(g) != string(w) {
					t.Fatalf("scale %v, n %d: encodeFixed(%v) = %x, toFixed gives %x", scale, n, x[i], g, w)
				}
			}
		}
		for start := 0; start+70 <= len(xs); start += 70 {
			x := xs[start : start+70]
			enc := make([]byte, 4*len(x))
			encodeFixedGeneric(enc, x, scale)
			// Sums of several workers too: values the encoder never gives.
			for i := range 70 {
				if rng.IntN(3) == 0 {
					v := rng.Uint32()
					enc[4*i], enc[4*i+1], enc[4*i+2], enc[4*i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
				}
			}
			for n := 0; n <= 70; n++ {
				guarded, want := make([]float32, n+8), make([]float32, n)
				for i := range guarded {
					guarded[i] = 12345
				}
				got := guarded[:n]
				decodeFixed(got, enc, scale)
				for i, g := range guarded[n:] {
					if g != 12345 {
						t.Fatalf("scale %v, n %d: decodeFixed wrote value %d past the values", scale, n, i)
					}
				}
				decodeFixedGeneric(want, enc, scale)
				for i := range n {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("scale %v, n %d: decodeFixed lane %d = %v, fromFixed gives %v", scale, n, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func BenchmarkEncodeFixed(b *testing.B) {
	x := make([]float32, 63)
	for i := range x {
		x[i] = float32(i) / 7
	}
	dst := make([]byte, 4*64)
	for _, k := range []struct {
		name string
		fn   func([]byte, []float32, float64)
	}{{"generic", encodeFixedGeneric}, {"inuse", encodeFixed}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.fn(dst, x, DefaultScale)
			}
		})
	}
}

func BenchmarkDecodeFixed(b *testing.B) {
	src := make([]byte, 4*64)
	dst := make([]float32, 63)
	for _, k := range []struct {
		name string
		fn   func([]float32, []byte, float64)
	}{{"generic", decodeFixedGeneric}, {"inuse", decodeFixed}} {
		for _, scale := range []float64{DefaultScale, 1000.7} {
			b.Run(k.name, func(b *testing.B) {
				for b.Loop() {
					k.fn(dst, src, scale)
				}
			})
		}
	}
}
