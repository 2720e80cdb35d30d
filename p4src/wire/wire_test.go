package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
)

func sampleFrame() Frame {
	f := Frame{
		Addr: Addr{
			SrcMAC: net.HardwareAddr{0, 0, 0, 0, 1, 1}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 0x64},
			SrcIP: net.IPv4(10, 0, 1, 1).To4(), DstIP: net.IPv4(10, 0, 0, 100).To4(),
		},
		TOS: 3, ID: 0xbeef, TTL: 64, SrcPort: 12345,
		INA: Header{Version: Version, Type: TypeData, Priority: 7, Flags: FlagResend | FlagECN,
			Job: 1023, Slot: 1023, Seq: 0xfffffffe, Bitmap: 0x80000001},
	}
	for i := range f.INA.Values {
		f.INA.Values[i] = int32(i*i) - 1000
	}
	f.INA.Values[0], f.INA.Values[1] = -1<<31, 1<<31-1
	return f
}

func TestFrameRoundTrip(t *testing.T) {
	for _, typ := range []Type{TypeData, TypeResult} {
		f := sampleFrame()
		f.INA.Type = typ
		b := f.Marshal()
		if len(b) != FrameLen {
			t.Fatalf("frame is %d bytes, want %d", len(b), FrameLen)
		}
		var g Frame
		if err := g.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if !framesEqual(&f, &g) {
			t.Errorf("round trip changed the frame:\nwant %+v\ngot  %+v", f, g)
		}
		if !bytes.Equal(g.Marshal(), b) {
			t.Error("re-encoding a decoded frame changed its bytes")
		}
	}
}

// MarshalHeadersTo writes every byte MarshalTo writes but the values, and leaves those alone.
func TestMarshalHeadersTo(t *testing.T) {
	f := sampleFrame()
	want := f.Marshal()
	got := bytes.Repeat([]byte{0xa5}, FrameLen)
	if err := f.MarshalHeadersTo(got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:42+HeaderLen], want[:42+HeaderLen]) {
		t.Errorf("headers\n%x, want\n%x", got[:42+HeaderLen], want[:42+HeaderLen])
	}
	if !bytes.Equal(got[42+HeaderLen:], bytes.Repeat([]byte{0xa5}, 4*NumValues)) {
		t.Error("MarshalHeadersTo wrote into the values")
	}
	if err := f.MarshalHeadersTo(got[:FrameLen-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short buffer: %v", err)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := sampleFrame().INA
	b := make([]byte, PayloadLen)
	if err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	var g Header
	if err := g.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if g != h {
		t.Errorf("got %+v, want %+v", g, h)
	}
	if err := h.MarshalTo(b[:PayloadLen-1]); !errors.Is(err, ErrShort) {
		t.Errorf("MarshalTo into a short buffer: %v", err)
	}
	if err := (&Frame{}).MarshalTo(make([]byte, FrameLen-1)); !errors.Is(err, ErrShort) {
		t.Errorf("Frame.MarshalTo into a short buffer: %v", err)
	}
}

// TestFrameLayout pins the offsets of docs/protocol.md, independently of the decoder.
func TestFrameLayout(t *testing.T) {
	f := sampleFrame()
	b := f.Marshal()
	be16 := func(o int) uint16 { return binary.BigEndian.Uint16(b[o:]) }
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"ethertype", uint64(be16(12)), EtherTypeIPv4},
		{"version/IHL", uint64(b[14]), 0x45},
		{"IPv4 total length", uint64(be16(16)), 300},
		{"IPv4 checksum", uint64(IPv4Checksum(b[14:34])), 0}, // a valid header sums to 0xffff
		{"UDP dport", uint64(be16(36)), 47000},
		{"UDP length", uint64(be16(38)), 280},
		{"UDP checksum", uint64(be16(40)), 0},
		{"INA version/type", uint64(b[42]), 0x11},
		{"priority", uint64(b[43]), 7},
		{"flags", uint64(be16(44)), 0x0041},
		{"job", uint64(be16(46)), 1023},
		{"slot", uint64(be16(48)), 1023},
		{"seq", uint64(binary.BigEndian.Uint32(b[50:])), 0xfffffffe},
		{"bitmap", uint64(binary.BigEndian.Uint32(b[54:])), 0x80000001},
		{"value 0", uint64(binary.BigEndian.Uint32(b[58:])), 0x80000000},
		{"value 63", uint64(binary.BigEndian.Uint32(b[58+4*63:])), uint64(int32(63*63 - 1000))},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestFrameErrors(t *testing.T) {
	good := sampleFrame()
	base := good.Marshal()
	edit := func(fn func(b []byte) []byte) []byte {
		b := append([]byte{}, base...)
		return fn(b)
	}
	put16 := func(o int, v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint16(b[o:], v); return b }
	}
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrShort},
		{"41 bytes", base[:41], ErrShort},
		{"one byte short", base[:FrameLen-1], ErrShort},
		{"headers only", base[:42+HeaderLen], ErrShort},
		{"one byte long", append(append([]byte{}, base...), 0), ErrTrailing},
		{"not IPv4", edit(put16(12, 0x86dd)), ErrNotINA},
		{"not UDP", edit(func(b []byte) []byte { b[23] = 6; return b }), ErrNotINA},
		{"IP version 6", edit(func(b []byte) []byte { b[14] = 0x65; return b }), ErrNotINA},
		{"other UDP port", edit(put16(36, 53)), ErrNotINA},
		{"IHL 6", edit(func(b []byte) []byte { b[14] = 0x46; return b }), ErrIPHeader},
		{"IPv4 total length", edit(put16(16, 299)), ErrLength},
		{"UDP length", edit(put16(38, 281)), ErrLength},
		{"version 0", edit(func(b []byte) []byte { b[42] = 0x01; return b }), ErrVersion},
		{"version 2", edit(func(b []byte) []byte { b[42] = 0x21; return b }), ErrVersion},
		{"type 0", edit(func(b []byte) []byte { b[42] = 0x10; return b }), ErrType},
		{"type 3", edit(func(b []byte) []byte { b[42] = 0x13; return b }), ErrType},
		{"type 15", edit(func(b []byte) []byte { b[42] = 0x1f; return b }), ErrType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Frame
			err := f.Unmarshal(c.frame)
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestHeaderErrors(t *testing.T) {
	h := sampleFrame().INA
	b := make([]byte, PayloadLen+1)
	_ = h.MarshalTo(b)
	var g Header
	if err := g.Unmarshal(b[:PayloadLen-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short payload: %v", err)
	}
	if err := g.Unmarshal(b); !errors.Is(err, ErrTrailing) {
		t.Errorf("long payload: %v", err)
	}
}

func TestNamesRoundTrip(t *testing.T) {
	for e := Event(0); e < NumEvents; e++ {
		if got, ok := EventByName(e.String()); !ok || got != e {
			t.Errorf("event %d: name %q does not map back", e, e)
		}
	}
	if _, ok := EventByName("nope"); ok {
		t.Error("unknown event name accepted")
	}
	for bit := Flags(1); bit <= FlagFloat; bit <<= 1 {
		names := bit.Names()
		if len(names) != 1 {
			t.Fatalf("flag %#x has names %v", uint16(bit), names)
		}
		if got, ok := FlagByName(names[0]); !ok || got != bit {
			t.Errorf("flag %q does not map back", names[0])
		}
	}
	if s := (FlagResend | FlagECN).String(); s != "resend|ecn" {
		t.Errorf("flags string %q", s)
	}
	if JobEventIndex(3, EventCompleted) != 3*int(NumEvents)+2 {
		t.Error("JobEventIndex")
	}
}

func framesEqual(a, b *Frame) bool {
	return bytes.Equal(a.SrcMAC, b.SrcMAC) && bytes.Equal(a.DstMAC, b.DstMAC) &&
		a.SrcIP.Equal(b.SrcIP) && a.DstIP.Equal(b.DstIP) && a.TOS == b.TOS && a.ID == b.ID &&
		a.TTL == b.TTL && a.SrcPort == b.SrcPort && a.INA == b.INA
}

// rfc1071 is RFC 1071's checksum as the RFC writes it, 16 bits at a time: the reference that
// IPv4Checksum, 32 bits at a time, must agree with.
func rfc1071(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Every length from 0 to 64 (odd and not a multiple of 4 included), with random bytes and with
// all-0xff bytes (the carries' worst case).
func TestIPv4ChecksumMatchesRFC1071(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 65 {
		ones := bytes.Repeat([]byte{0xff}, n)
		if got, want := IPv4Checksum(ones), rfc1071(ones); got != want {
			t.Fatalf("%d bytes of 0xff: %#04x, want %#04x", n, got, want)
		}
		b := make([]byte, n)
		for range 200 {
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			if got, want := IPv4Checksum(b), rfc1071(b); got != want {
				t.Fatalf("% x: %#04x, want %#04x", b, got, want)
			}
		}
	}
}

// BenchmarkIPv4Checksum: a 20-byte header, with the RFC's loop as the baseline in the same run.
func BenchmarkIPv4Checksum(b *testing.B) {
	sf := sampleFrame()
	hdr := sf.Marshal()[14:34]
	hdr[10], hdr[11] = 0, 0 // the checksum field, as IPv4Checksum expects it
	var sink uint16
	b.Run("words", func(b *testing.B) {
		for range b.N {
			sink += IPv4Checksum(hdr)
		}
	})
	b.Run("rfc1071", func(b *testing.B) {
		for range b.N {
			sink += rfc1071(hdr)
		}
	})
	_ = sink
}

// The member index is the top 4 bits of the header's third 16-bit word, the flags its low 12: a
// frame of an agent that predates the field (those bits 0) decodes as member 0.
func TestMemberShareTheFlagsWord(t *testing.T) {
	h := Header{Version: Version, Type: TypeData, Member: 5, Flags: FlagResend | FlagECN | FlagFloat, Job: 1}
	b := make([]byte, PayloadLen)
	if err := h.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[2] != 0x51 || b[3] != 0x41 {
		t.Fatalf("word %#02x%02x, want 0x5141", b[2], b[3])
	}
	var g Header
	if err := g.Unmarshal(b); err != nil || g.Member != 5 || g.Flags != h.Flags {
		t.Fatalf("decoded member %d flags %v (%v)", g.Member, g.Flags, err)
	}
	b[2] &= 0x0f
	if err := g.Unmarshal(b); err != nil || g.Member != 0 || g.Flags != h.Flags {
		t.Fatalf("member bits 0: decoded member %d flags %v (%v)", g.Member, g.Flags, err)
	}
	h.Flags |= 0xF000 // flags cannot spill into the member
	h.Member = 2
	_ = h.MarshalTo(b)
	if b[2]>>4 != 2 {
		t.Fatalf("member %d, want 2", b[2]>>4)
	}
}
