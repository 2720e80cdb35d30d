package devconfig

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func sample() *Tofino {
	return &Tofino{PipelineName: "ina", Profile: "pipe", PipeScope: []uint32{0, 2},
		BfrtJSON: []byte(`{"tables":[]}`), ContextJSON: []byte(`{"ctx":1}`), Binary: []byte{0, 1, 2, 0xff}}
}

// fields decodes one protobuf message level into field number -> raw values.
func fields(t *testing.T, b []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			t.Fatalf("bad tag at %x", b)
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			t.Fatalf("bad bytes")
		}
		out[num] = append(out[num], v)
		b = b[n:]
	}
	return out
}

func TestStratumLayout(t *testing.T) {
	tf := sample()
	b, err := tf.Stratum()
	if err != nil {
		t.Fatal(err)
	}
	top := fields(t, b)
	if string(top[1][0]) != "ina" || !bytes.Equal(top[2][0], tf.BfrtJSON) || len(top[3]) != 1 {
		t.Fatalf("top-level fields wrong: %q", top)
	}
	prof := fields(t, top[3][0])
	if string(prof[1][0]) != "pipe" || !bytes.Equal(prof[2][0], tf.ContextJSON) || !bytes.Equal(prof[3][0], tf.Binary) {
		t.Fatalf("profile fields wrong: %q", prof)
	}
	if !bytes.Equal(prof[4][0], []byte{0, 2}) {
		t.Fatalf("pipe_scope = %x, want packed 00 02", prof[4][0])
	}
}

func TestStratumNeedsBfrt(t *testing.T) {
	tf := sample()
	tf.BfrtJSON = nil
	if _, err := tf.Stratum(); err == nil {
		t.Fatal("stratum form without bf-rt.json accepted")
	}
	if _, err := tf.PI(); err != nil {
		t.Fatalf("PI form does not need bf-rt.json: %v", err)
	}
}

func TestPIRoundTrip(t *testing.T) {
	tf := sample()
	b, err := tf.PI()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:7], []byte{3, 0, 0, 0, 'i', 'n', 'a'}) {
		t.Fatalf("PI prefix = %x, want LE32 length then name", b[:7])
	}
	back, err := ParsePI(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.PipelineName != "ina" || !bytes.Equal(back.Binary, tf.Binary) || !bytes.Equal(back.ContextJSON, tf.ContextJSON) {
		t.Fatalf("round trip: %+v", back)
	}
	for _, bad := range [][]byte{nil, b[:5], b[:len(b)-1], append(append([]byte{}, b...), 0), {0xff, 0xff, 0xff, 0xff}} {
		if _, err := ParsePI(bad); err == nil {
			t.Errorf("ParsePI(%x) accepted", bad)
		}
	}
}

func TestMissingParts(t *testing.T) {
	if _, err := (&Tofino{}).PI(); err == nil {
		t.Fatal("empty config accepted")
	}
}
