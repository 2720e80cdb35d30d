package wire

import (
	"bytes"
	"testing"
)

// FuzzFrame: decoding never panics, and a frame that decodes re-encodes to the same frame.
func FuzzFrame(f *testing.F) {
	good := sampleFrame()
	b := good.Marshal()
	f.Add(b)
	f.Add(b[:100])
	f.Add(append(append([]byte{}, b...), 1, 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var x, v Frame
		err := x.Unmarshal(data)
		vals, verr := v.UnmarshalView(data)
		var h Header
		hvals, herr := h.UnmarshalFrameView(data)
		for _, e := range []error{verr, herr} {
			if (err == nil) != (e == nil) || err != nil && err.Error() != e.Error() {
				t.Fatalf("Unmarshal: %v, UnmarshalView: %v, UnmarshalFrameView: %v", err, verr, herr)
			}
		}
		if err != nil {
			return
		}
		v.INA.Values, h.Values = x.INA.Values, x.INA.Values
		if !framesEqual(&x, &v) || !bytes.Equal(vals, data[42+HeaderLen:]) {
			t.Fatal("UnmarshalView decoded differently from Unmarshal")
		}
		if h != x.INA || !bytes.Equal(hvals, data[42+HeaderLen:]) {
			t.Fatal("UnmarshalFrameView decoded differently from Unmarshal")
		}
		enc := x.Marshal()
		var y Frame
		if err := y.Unmarshal(enc); err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !framesEqual(&x, &y) {
			t.Fatalf("decode(encode(x)) != x:\n%+v\n%+v", x, y)
		}
		// What the encoder normalises (checksums, fragment bits) aside, the bytes survive.
		want := append([]byte{}, data...)
		copy(want[20:22], enc[20:22]) // IPv4 flags/fragment: the encoder writes 0
		copy(want[24:26], enc[24:26]) // IPv4 checksum: recomputed
		copy(want[40:42], enc[40:42]) // UDP checksum: 0
		if !bytes.Equal(want, enc) {
			t.Fatalf("re-encoding changed bytes other than checksums and fragment bits")
		}
	})
}
