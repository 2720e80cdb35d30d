package ps

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// randomValues returns K values drawn to hit the int32 bounds, small values and everything else,
// or (small) only values whose sums stay in range.
func randomValues(r *rand.Rand, small bool) (v packed, want [wire.NumValues]int32) {
	for i := range want {
		switch k := r.IntN(4); {
		case small:
			want[i] = int32(r.IntN(1<<25) - 1<<24)
		case k == 0:
			want[i] = []int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, math.MaxInt32 - 1, math.MaxInt32}[r.IntN(7)]
		case k == 1:
			want[i] = int32(r.IntN(2001) - 1000)
		default:
			want[i] = int32(r.Uint32())
		}
		binary.BigEndian.PutUint32(v[4*i:], uint32(want[i]))
	}
	return v, want
}

// kernels is one implementation of the merge kernels.
type kernels struct {
	name   string
	assign func(*sums, *packed)
	add    func(*sums, *packed)
	encode func(*packed, *sums) bool
}

// laneKernels are the implementations this machine runs (lanes_amd64_test.go adds AVX2).
var laneKernels = []kernels{{"generic", assignValuesGeneric, addValuesGeneric, encodeSumsGeneric}}

// Every implementation of the kernels against the plain definition: int64 sums of big-endian int32
// values, and a result only when every sum lies strictly inside the int32 bounds.
func TestLanes(t *testing.T) {
	for _, k := range laneKernels {
		t.Run(k.name, func(t *testing.T) { testLanes(t, k) })
	}
}

func testLanes(t *testing.T, k kernels) {
	r := rand.New(rand.NewPCG(1, 2))
	encoded := 0
	for round := range 2000 {
		var got sums
		var want [wire.NumValues]int64
		n := 1 + r.IntN(32)
		for p := range n {
			v, vals := randomValues(r, round%2 == 0)
			if p == 0 {
				k.assign(&got, &v)
			} else {
				k.add(&got, &v)
			}
			for i, x := range vals {
				if p == 0 {
					want[i] = 0
				}
				want[i] += int64(x)
			}
		}
		if got != want {
			t.Fatalf("sums %v, want %v", got, want)
		}
		var out packed
		inside := true
		for _, s := range want {
			inside = inside && s > math.MinInt32 && s < math.MaxInt32
		}
		if ok := k.encode(&out, &got); ok != inside {
			t.Fatalf("encodeSums reported %v for %v", ok, want)
		}
		if !inside {
			continue
		}
		encoded++
		for i, s := range want {
			if x := value(&out, i); int64(x) != s {
				t.Fatalf("value %d encoded as %d, want %d", i, x, s)
			}
		}
	}
	if encoded < 1000 {
		t.Fatalf("only %d of 2000 rounds in range: the test does not exercise encoding", encoded)
	}
	// Each bound, alone in one lane, sends the chunk to the exact path.
	for _, s := range []int64{math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, 32 * math.MaxInt32, 32 * math.MinInt32} {
		for lane := range wire.NumValues {
			var sum sums
			sum[lane] = s
			var out packed
			if k.encode(&out, &sum) {
				t.Fatalf("sum %d in lane %d encoded as in range", s, lane)
			}
		}
	}
}

// BenchmarkAddValues is one kernel's add over the values of mergeFrames, one frame per op.
func BenchmarkAddValues(b *testing.B) {
	frames := mergeFrames()
	for _, k := range laneKernels {
		b.Run(k.name, func(b *testing.B) {
			var s sums
			b.SetBytes(4 * wire.NumValues)
			next := 0
			for range b.N {
				if next == len(frames) {
					next = 0
				}
				k.add(&s, (*packed)(frames[next][42+wire.HeaderLen:]))
				next++
			}
		})
	}
}
