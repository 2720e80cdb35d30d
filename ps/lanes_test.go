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
	name         string
	narrowLanes  bool
	assignNarrow func(*narrow, *packed)
	addNarrow    func(*narrow, *packed) bool
	encodeNarrow func(*packed, *narrow) bool
	assignValues func(*sums, *packed)
	addValues    func(*sums, *packed)
	encodeSums   func(*packed, *sums) bool
}

// laneKernels are the implementations this machine runs (lanes_amd64_test.go adds AVX2), the
// portable ones also in int32 lanes, which only vector kernels use.
var laneKernels = []kernels{
	{"generic", false, assignNarrowGeneric, addNarrowGeneric, encodeNarrowGeneric, assignValuesGeneric, addValuesGeneric, encodeSumsGeneric},
	{"generic-narrow", true, assignNarrowGeneric, addNarrowGeneric, encodeNarrowGeneric, assignValuesGeneric, addValuesGeneric, encodeSumsGeneric},
}

// use makes k the kernels the merge calls until the test ends.
func (k kernels) use(t testing.TB) {
	saved := kernels{"", narrowLanes, assignNarrow, addNarrow, encodeNarrow, assignValues, addValues, encodeSums}
	t.Cleanup(func() { saved.set() })
	k.set()
}

func (k kernels) set() {
	narrowLanes, assignNarrow, addNarrow, encodeNarrow = k.narrowLanes, k.assignNarrow, k.addNarrow, k.encodeNarrow
	assignValues, addValues, encodeSums = k.assignValues, k.addValues, k.encodeSums
}

// Every implementation of the kernels, through a chunk, against the plain definition: int64 sums
// of big-endian int32 values, int32 lanes until a partial sum leaves int32, and a result only when
// every sum lies strictly inside the int32 bounds.
func TestLanes(t *testing.T) {
	for _, k := range laneKernels {
		t.Run(k.name, func(t *testing.T) {
			k.use(t)
			testLanes(t)
		})
	}
}

func testLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	encoded, wide := 0, 0
	for round := range 4000 {
		var cs chunk
		var want [wire.NumValues]int64
		wantWide := !narrowLanes
		for p := range 1 + r.IntN(32) {
			v, vals := randomValues(r, round%2 == 0)
			if p == 0 {
				cs.assign(&v)
			} else {
				cs.add(&v)
			}
			for i, x := range vals {
				if p == 0 {
					want[i] = 0
				}
				want[i] += int64(x)
				wantWide = wantWide || want[i] != int64(int32(want[i]))
			}
		}
		if cs.wide != wantWide {
			t.Fatalf("round %d: wide %v, want %v", round, cs.wide, wantWide)
		}
		for i, s := range want {
			if got := int64(cs.sum32[i]); cs.wide {
				got = cs.sum[i]
			} else if got != s {
				t.Fatalf("round %d: narrow sum %d = %d, want %d", round, i, got, s)
			}
		}
		if cs.wide && cs.sum != want {
			t.Fatalf("round %d: sums %v, want %v", round, cs.sum, want)
		}
		var out packed
		inside := true
		for _, s := range want {
			inside = inside && s > math.MinInt32 && s < math.MaxInt32
		}
		if ok := cs.encode(&out); ok != inside {
			t.Fatalf("round %d: encode reported %v for %v", round, ok, want)
		}
		if cs.wide {
			wide++
		}
		if !inside {
			continue
		}
		encoded++
		for i, s := range want {
			if x := value(&out, i); int64(x) != s {
				t.Fatalf("round %d: value %d encoded as %d, want %d", round, i, x, s)
			}
		}
	}
	if encoded < 2000 || wide < 500 || narrowLanes && wide > 3500 {
		t.Fatalf("%d of 4000 rounds encoded, %d wide: the test does not exercise both paths", encoded, wide)
	}
	// Each bound, alone in one lane, sends the chunk to the exact path, narrow or wide.
	for _, s := range []int64{math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, 32 * math.MaxInt32, 32 * math.MinInt32} {
		for lane := range wire.NumValues {
			var cs chunk
			if cs.wide = s != int64(int32(s)); cs.wide {
				cs.sum[lane] = s
			} else {
				cs.sum32[lane] = int32(s)
			}
			var out packed
			if cs.encode(&out) {
				t.Fatalf("sum %d in lane %d encoded as in range", s, lane)
			}
		}
	}
}

// BenchmarkAdd is one implementation's add alone over the benchmark's frames, one per op.
func BenchmarkAdd(b *testing.B) {
	frames := mergeFrames()
	for _, k := range laneKernels {
		b.Run(k.name, func(b *testing.B) {
			var s narrow
			var w sums
			b.SetBytes(4 * wire.NumValues)
			next := 0
			for range b.N {
				if next == len(frames) {
					next = 0
				}
				if v := (*packed)(frames[next][42+wire.HeaderLen:]); k.narrowLanes {
					k.addNarrow(&s, v)
				} else {
					k.addValues(&w, v)
				}
				next++
			}
		})
	}
}
