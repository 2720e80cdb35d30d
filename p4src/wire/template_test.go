package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// A stamped template is, byte for byte, the frame MarshalTo writes with the same fields: every
// IPv4 ID (the checksum is the only header derived from a per-frame field), and random flags
// (including bits outside the mask and the member's), slots and seqs.
func TestTemplateStampMatchesMarshal(t *testing.T) {
	f := sampleFrame()
	f.INA.Member = 9
	tmpl := f.NewTemplate()
	v := tmpl.Values()
	for i := range f.INA.Values {
		putValue(v, i, f.INA.Values[i])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(id uint16, flags Flags, slot uint16, seq uint32) {
		t.Helper()
		g := f
		g.ID, g.INA.Flags, g.INA.Slot, g.INA.Seq = id, flags, slot, seq
		want := g.Marshal()
		if got := tmpl.Stamp(id, flags, slot, seq); !bytes.Equal(got, want) {
			t.Fatalf("id %#x flags %#x slot %d seq %#x:\n got %x\nwant %x", id, flags, slot, seq, got[:58], want[:58])
		}
	}
	for id := 0; id <= 0xffff; id++ {
		check(uint16(id), Flags(rng.Uint32()), uint16(rng.Uint32()), rng.Uint32())
	}
	check(0, 0xffff, 0xffff, 0xffffffff)
}

// putValue writes value i of a frame's values big-endian.
func putValue(v *[4 * NumValues]byte, i int, x int32) {
	v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(x>>24), byte(x>>16), byte(x>>8), byte(x)
}
