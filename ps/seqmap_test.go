package ps

import (
	"math/rand/v2"
	"testing"
)

// seqMap against a Go map, with seqs chosen to share home slots (spills), far apart and wrapping.
func TestSeqMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := newSeqMap[int](1, 0)
	if len(m.slots) != 64 {
		t.Fatalf("%d slots, want the minimum 64", len(m.slots))
	}
	ref := map[uint32]int{}
	seqs := []uint32{0, 1, 63, 64, 65, 128, 1 << 31, 1<<32 - 1, 1<<32 - 64}
	for i := range 100 {
		seqs = append(seqs, uint32(i*64+7), r.Uint32())
	}
	for op := range 100000 {
		q := seqs[r.IntN(len(seqs))]
		want, in := ref[q]
		switch r.IntN(5) {
		case 0, 1:
			if v, ok := m.get(q); ok != in || v != want {
				t.Fatalf("op %d: get(%d) = %d %v, want %d %v", op, q, v, ok, want, in)
			}
		case 2, 3:
			if !in {
				m.put(q, op)
				ref[q] = op
			}
		default:
			if v, ok := m.del(q); ok != in || v != want {
				t.Fatalf("op %d: del(%d) = %d %v, want %d %v", op, q, v, ok, want, in)
			}
			delete(ref, q)
		}
		if m.n != len(ref) {
			t.Fatalf("op %d: n = %d, want %d", op, m.n, len(ref))
		}
		if op%10000 == 9999 {
			freed := 0
			m.prune(func(q uint32) bool { return q%3 == 0 }, func(int) { freed++ })
			for q := range ref {
				if q%3 == 0 {
					delete(ref, q)
					freed--
				}
			}
			if freed != 0 || m.n != len(ref) {
				t.Fatalf("prune freed %d more than it should; n = %d, want %d", freed, m.n, len(ref))
			}
		}
	}
	if len(m.spill) == 0 {
		t.Error("no seq spilled: the test does not exercise the spill map")
	}
}
