// Package wire encodes and decodes INA frames: Ethernet / IPv4 / UDP / INA header / K int32 values.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// Header is the INA header and its values. The layout is documented in docs/protocol.md:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------+-------+---------------+-------------------------------+
//	|Version| Type  |   Priority    |Member |         Flags         |
//	+-------+-------+---------------+-------+-----------------------+
//	|            Job ID             |          Slot index           |
//	+-------------------------------+-------------------------------+
//	|                        Sequence number                        |
//	+---------------------------------------------------------------+
//	|                         Worker bitmap                         |
//	+---------------------------------------------------------------+
//	|                     K signed 32-bit values                    |
//	+                              ...                              +
type Header struct {
	Version  uint8 // 4 bits
	Type     Type  // 4 bits
	Priority uint8
	Member   uint8 // 4 bits: the sender's index behind its switch port (0 for a port's only worker)
	Flags    Flags // 12 bits
	Job      uint16
	Slot     uint16
	Seq      uint32
	Bitmap   uint32
	Values   [NumValues]int32
}

// Errors returned by the decoders. They wrap a description of the offending field.
var (
	ErrShort    = errors.New("wire: packet too short")
	ErrLength   = errors.New("wire: length field mismatch")
	ErrVersion  = errors.New("wire: unsupported INA version")
	ErrType     = errors.New("wire: unknown INA packet type")
	ErrNotINA   = errors.New("wire: not an INA packet")
	ErrIPHeader = errors.New("wire: unsupported IPv4 header")
	ErrTrailing = errors.New("wire: trailing bytes after the INA payload")
)

// MarshalTo writes the header and values into b, which must hold PayloadLen bytes.
func (h *Header) MarshalTo(b []byte) error {
	if len(b) < PayloadLen {
		return fmt.Errorf("%w: need %d bytes, have %d", ErrShort, PayloadLen, len(b))
	}
	h.marshalFields(b)
	for i, v := range h.Values {
		binary.BigEndian.PutUint32(b[HeaderLen+4*i:], uint32(v))
	}
	return nil
}

// marshalFields writes everything but the values into b (HeaderLen bytes).
func (h *Header) marshalFields(b []byte) {
	b[0] = h.Version<<4 | uint8(h.Type)&0x0f
	b[1] = h.Priority
	binary.BigEndian.PutUint16(b[2:], uint16(h.Member&0x0f)<<12|uint16(h.Flags&FlagsMask))
	binary.BigEndian.PutUint16(b[4:], h.Job)
	binary.BigEndian.PutUint16(b[6:], h.Slot)
	binary.BigEndian.PutUint32(b[8:], h.Seq)
	binary.BigEndian.PutUint32(b[12:], h.Bitmap)
}

// Unmarshal decodes exactly PayloadLen bytes. It checks the length first, then the version and type.
func (h *Header) Unmarshal(b []byte) error {
	if err := h.unmarshalFields(b); err != nil {
		return err
	}
	for i := range h.Values {
		h.Values[i] = int32(binary.BigEndian.Uint32(b[HeaderLen+4*i:]))
	}
	return h.check()
}

// unmarshalFields checks the length and decodes everything but the values.
func (h *Header) unmarshalFields(b []byte) error {
	if len(b) != PayloadLen {
		return payloadLenError(len(b))
	}
	h.Version = b[0] >> 4
	h.Type = Type(b[0] & 0x0f)
	h.Priority = b[1]
	w := binary.BigEndian.Uint16(b[2:])
	h.Member = uint8(w >> 12)
	h.Flags = Flags(w) & FlagsMask
	h.Job = binary.BigEndian.Uint16(b[4:])
	h.Slot = binary.BigEndian.Uint16(b[6:])
	h.Seq = binary.BigEndian.Uint32(b[8:])
	h.Bitmap = binary.BigEndian.Uint32(b[12:])
	return nil
}

// The decoders' error paths are functions of their own, so that the checks on the per-packet path
// stay small.

func payloadLenError(n int) error {
	if n < PayloadLen {
		return fmt.Errorf("%w: INA payload is %d bytes, want %d", ErrShort, n, PayloadLen)
	}
	return fmt.Errorf("%w: INA payload is %d bytes, want %d", ErrTrailing, n, PayloadLen)
}

func (h *Header) check() error {
	if h.Version == Version && (h.Type == TypeData || h.Type == TypeResult) {
		return nil
	}
	return h.checkError()
}

func (h *Header) checkError() error {
	if h.Version != Version {
		return fmt.Errorf("%w: %d", ErrVersion, h.Version)
	}
	if h.Type != TypeData && h.Type != TypeResult {
		return fmt.Errorf("%w: %d", ErrType, h.Type)
	}
	return nil
}

// Addr is the Ethernet and IPv4 addressing of a frame.
type Addr struct {
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   net.IP
}

// Frame is a whole INA frame: addressing, a few IPv4 fields, and the INA header.
//
//	+-----------------+---------------+----------+--------------------+--------------+
//	| Ethernet (14)   | IPv4, IHL 5   | UDP (8)  | INA header (16)    | K x int32    |
//	+-----------------+---------------+----------+--------------------+--------------+
type Frame struct {
	Addr
	TOS     uint8
	ID      uint16
	TTL     uint8
	SrcPort uint16 // UDP source port; the destination port is always UDPPort
	INA     Header
}

// MarshalTo writes the frame into b (FrameLen bytes), with the IPv4 checksum computed and the UDP
// checksum 0.
func (f *Frame) MarshalTo(b []byte) error {
	if len(b) < FrameLen {
		return fmt.Errorf("%w: need %d bytes, have %d", ErrShort, FrameLen, len(b))
	}
	return f.INA.MarshalTo(f.marshalAddr(b))
}

// MarshalHeadersTo is MarshalTo without the values: it writes every header into b (FrameLen bytes)
// and leaves the K values' bytes to the caller, who may have them encoded already.
func (f *Frame) MarshalHeadersTo(b []byte) error {
	if len(b) < FrameLen {
		return fmt.Errorf("%w: need %d bytes, have %d", ErrShort, FrameLen, len(b))
	}
	f.INA.marshalFields(f.marshalAddr(b))
	return nil
}

// marshalAddr writes the frame up to the INA header and returns the rest of b.
func (f *Frame) marshalAddr(b []byte) []byte {
	copy(b[0:6], mac6(f.DstMAC))
	copy(b[6:12], mac6(f.SrcMAC))
	binary.BigEndian.PutUint16(b[12:], EtherTypeIPv4)
	ip := b[14:34]
	ip[0] = 0x45
	ip[1] = f.TOS
	binary.BigEndian.PutUint16(ip[2:], IPv4TotalLen)
	binary.BigEndian.PutUint16(ip[4:], f.ID)
	binary.BigEndian.PutUint16(ip[6:], 0)
	ip[8] = f.TTL
	ip[9] = ProtoUDP
	binary.BigEndian.PutUint16(ip[10:], 0)
	copy(ip[12:16], ip4(f.SrcIP))
	copy(ip[16:20], ip4(f.DstIP))
	binary.BigEndian.PutUint16(ip[10:], IPv4Checksum(ip))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], f.SrcPort)
	binary.BigEndian.PutUint16(udp[2:], UDPPort)
	binary.BigEndian.PutUint16(udp[4:], UDPLen)
	binary.BigEndian.PutUint16(udp[6:], 0)
	return b[42:FrameLen]
}

// Marshal returns the encoded frame.
func (f *Frame) Marshal() []byte {
	b := make([]byte, FrameLen)
	_ = f.MarshalTo(b) // cannot fail: b has FrameLen bytes
	return b
}

// Unmarshal decodes an INA frame. Lengths are checked before anything else is read; the IPv4
// checksum is not verified (switches recompute it). The MAC and IP slices alias b.
func (f *Frame) Unmarshal(b []byte) error {
	if err := checkFrame(b); err != nil {
		return err
	}
	f.unmarshalAddr(b)
	return f.INA.Unmarshal(b[42:])
}

// UnmarshalView is Unmarshal without copying the values: it checks and decodes everything else
// (f.INA.Values is left as it was) and returns the K big-endian values, aliasing b.
func (f *Frame) UnmarshalView(b []byte) (values []byte, err error) {
	if err := checkFrame(b); err != nil {
		return nil, err
	}
	f.unmarshalAddr(b)
	return f.INA.unmarshalView(b)
}

// UnmarshalFrameView is Frame.UnmarshalView for a receiver that needs only the INA header of a
// frame (the parameter server): the same checks, h decoded (h.Values left as they were), and the
// K big-endian values returned in place.
func (h *Header) UnmarshalFrameView(b []byte) (values []byte, err error) {
	if err := checkFrame(b); err != nil {
		return nil, err
	}
	return h.unmarshalView(b)
}

// unmarshalView decodes the INA header of a checked frame b and returns its values, aliasing b.
func (h *Header) unmarshalView(b []byte) ([]byte, error) {
	if err := h.unmarshalFields(b[42:]); err != nil {
		return nil, err
	}
	return b[42+HeaderLen : FrameLen], h.check()
}

// checkFrame checks the lengths and the frame up to the INA header.
func checkFrame(b []byte) error {
	// What frameError accepts, in one test.
	if len(b) == FrameLen && binary.BigEndian.Uint16(b[12:]) == EtherTypeIPv4 && b[14] == 0x45 &&
		b[14+9] == ProtoUDP && binary.BigEndian.Uint16(b[36:]) == UDPPort &&
		binary.BigEndian.Uint16(b[16:]) == IPv4TotalLen && binary.BigEndian.Uint16(b[38:]) == UDPLen {
		return nil
	}
	return frameError(b)
}

// frameError is checkFrame's checks one by one, in the order that names the error.
func frameError(b []byte) error {
	if len(b) < 42 {
		return fmt.Errorf("%w: frame is %d bytes", ErrShort, len(b))
	}
	if binary.BigEndian.Uint16(b[12:]) != EtherTypeIPv4 || b[14+9] != ProtoUDP || b[14]>>4 != 4 {
		return ErrNotINA
	}
	// The port is read at the fixed offset first, as the P4 parser does (it parses no options):
	// other UDP traffic with options is ErrNotINA, an INA packet with options ErrIPHeader.
	if binary.BigEndian.Uint16(b[36:]) != UDPPort {
		return ErrNotINA
	}
	if b[14]&0x0f != 5 {
		return fmt.Errorf("%w: IHL %d", ErrIPHeader, b[14]&0x0f)
	}
	if len(b) != FrameLen {
		if len(b) < FrameLen {
			return fmt.Errorf("%w: frame is %d bytes, want %d", ErrShort, len(b), FrameLen)
		}
		return fmt.Errorf("%w: frame is %d bytes, want %d", ErrTrailing, len(b), FrameLen)
	}
	if tl := binary.BigEndian.Uint16(b[16:]); tl != IPv4TotalLen {
		return fmt.Errorf("%w: IPv4 total length %d, want %d", ErrLength, tl, IPv4TotalLen)
	}
	if ul := binary.BigEndian.Uint16(b[38:]); ul != UDPLen {
		return fmt.Errorf("%w: UDP length %d, want %d", ErrLength, ul, UDPLen)
	}
	return nil
}

// unmarshalAddr decodes a checked frame up to the INA header.
func (f *Frame) unmarshalAddr(b []byte) {
	f.DstMAC = net.HardwareAddr(b[0:6])
	f.SrcMAC = net.HardwareAddr(b[6:12])
	f.TOS = b[15]
	f.ID = binary.BigEndian.Uint16(b[18:])
	f.TTL = b[22]
	f.SrcIP = net.IP(b[26:30])
	f.DstIP = net.IP(b[30:34])
	f.SrcPort = binary.BigEndian.Uint16(b[34:])
}

// IPv4Checksum is the RFC 1071 checksum of an IPv4 header whose checksum field is zero. It runs
// for every frame a worker sends and every frame the reference switch parses or rewrites, so it
// sums 32-bit words (the one's-complement sum folds them to the same 16 bits) rather than 16-bit
// ones: half the loads and adds of the RFC's loop.
func IPv4Checksum(hdr []byte) uint16 {
	if len(hdr) == 20 { // every header this project builds: no loop
		return fold(uint64(binary.BigEndian.Uint32(hdr[0:])) + uint64(binary.BigEndian.Uint32(hdr[4:])) +
			uint64(binary.BigEndian.Uint32(hdr[8:])) + uint64(binary.BigEndian.Uint32(hdr[12:])) +
			uint64(binary.BigEndian.Uint32(hdr[16:])))
	}
	var sum uint64
	for len(hdr) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(hdr))
		hdr = hdr[4:]
	}
	if len(hdr) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(hdr))
		hdr = hdr[2:]
	}
	if len(hdr) == 1 {
		sum += uint64(hdr[0]) << 8
	}
	return fold(sum)
}

// fold ends the one's-complement sum: carries folded into 16 bits, then complemented.
func fold(sum uint64) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func mac6(m net.HardwareAddr) []byte {
	if len(m) == 6 {
		return m
	}
	return make([]byte, 6)
}

func ip4(ip net.IP) []byte {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return make([]byte, 4)
}

// Template is a frame whose headers are written once, for a sender whose frames differ only in
// the IPv4 ID, the INA flags, slot and seq (a worker's chunks of a job): Stamp writes those four
// fields and the IPv4 checksum, from a sum of the other header words taken once, where
// MarshalHeadersTo writes and sums every header for every frame. The values are the caller's, in
// place (Values).
type Template struct {
	b      [FrameLen]byte
	ipSum  uint64 // the IPv4 header's 32-bit words with the ID and the checksum zero
	member uint16 // the member's bits of the header word shared with the flags
}

// NewTemplate returns f's headers as a template (f's ID, Flags, Slot and Seq are left to Stamp,
// its values zero).
func (f *Frame) NewTemplate() *Template {
	t := &Template{}
	g := *f
	g.ID, g.INA.Flags, g.INA.Slot, g.INA.Seq = 0, 0, 0, 0
	_ = g.MarshalHeadersTo(t.b[:]) // cannot fail: t.b holds FrameLen bytes
	binary.BigEndian.PutUint16(t.b[24:], 0)
	ip := t.b[14:34]
	for i := 0; i < 20; i += 4 {
		t.ipSum += uint64(binary.BigEndian.Uint32(ip[i:]))
	}
	t.member = uint16(g.INA.Member&0x0f) << 12
	return t
}

// Stamp writes the per-frame fields and returns the whole frame (the template's own bytes: valid,
// and changed by the next Stamp, until the caller has sent it).
func (t *Template) Stamp(id uint16, flags Flags, slot uint16, seq uint32) []byte {
	b := t.b[:]
	binary.BigEndian.PutUint16(b[18:], id)
	// The ID is the upper half of the IPv4 header's second 32-bit word.
	binary.BigEndian.PutUint16(b[24:], fold(t.ipSum+uint64(id)<<16))
	binary.BigEndian.PutUint16(b[44:], t.member|uint16(flags&FlagsMask))
	binary.BigEndian.PutUint16(b[48:], slot)
	binary.BigEndian.PutUint32(b[50:], seq)
	return b
}

// Values is the template's K values, big-endian, for the caller to fill before or after Stamp.
func (t *Template) Values() *[4 * NumValues]byte {
	return (*[4 * NumValues]byte)(t.b[FrameLen-4*NumValues:])
}

// SetUnicast turns a result frame (FrameLen bytes) into the answer for one worker: FlagUnicast
// added to its flags and bit, that worker's bit, as its bitmap, which the switches' ina_unicast
// entries deliver to that worker alone. Neither field is in the IPv4 header or the integrity lane,
// and the UDP checksum is 0, so nothing else changes.
func SetUnicast(frame []byte, bit uint32) {
	w := binary.BigEndian.Uint16(frame[44:])
	binary.BigEndian.PutUint16(frame[44:], w|uint16(FlagUnicast))
	binary.BigEndian.PutUint32(frame[54:], bit)
}
