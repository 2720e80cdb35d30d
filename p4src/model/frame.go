package model

import (
	"encoding/binary"

	"github.com/inapack/inapack/p4src/wire"
)

// Byte offsets in an INA frame (Ethernet / IPv4 IHL 5 / UDP / INA). The P4 parser extracts these
// headers at fixed offsets: it does not parse IPv4 options, so the UDP header is always at 34.
const (
	offEthType  = 12
	offIP       = 14
	offIPTotLen = offIP + 2
	offIPFrag   = offIP + 6 // 3 flag bits (reserved, DF, MF) and the 13-bit fragment offset
	offIPTTL    = offIP + 8
	offIPProto  = offIP + 9
	offIPCsum   = offIP + 10
	offIPDst    = offIP + 16
	offUDP      = offIP + 20
	offUDPDport = offUDP + 2
	offUDPLen   = offUDP + 4
	offUDPCsum  = offUDP + 6
	offINA      = offUDP + 8
	offPrio     = offINA + 1
	offFlags    = offINA + 2
	offJob      = offINA + 4
	offSlot     = offINA + 6
	offSeq      = offINA + 8
	offBitmap   = offINA + 12
	offValues   = offINA + wire.HeaderLen
)

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

// checksumOK verifies the IPv4 header checksum over the 20 bytes the parser extracts.
func checksumOK(f []byte) bool { return wire.IPv4Checksum(f[offIP:offUDP]) == 0 }

// fragOffset is the IPv4 fragment offset; moreFragments the MF flag.
func fragOffset(f []byte) uint16  { return be16(f[offIPFrag:]) & 0x1fff }
func moreFragments(f []byte) bool { return f[offIPFrag]&0x20 != 0 }
func be32(b []byte) uint32        { return binary.BigEndian.Uint32(b) }

// inaHeader is the part of the INA header the ingress reads.
type inaHeader struct {
	version, typ, prio uint8
	member             uint8
	flags              wire.Flags
	job, slot          uint16
	seq                uint32
}

func readINA(f []byte) inaHeader {
	return inaHeader{
		version: f[offINA] >> 4,
		typ:     f[offINA] & 0x0f,
		prio:    f[offPrio],
		member:  f[offFlags] >> 4,
		flags:   wire.Flags(be16(f[offFlags:])) & wire.FlagsMask,
		job:     be16(f[offJob:]),
		slot:    be16(f[offSlot:]),
		seq:     be32(f[offSeq:]),
	}
}

// setINA overwrites the header fields an emitted data packet carries (version and type stay); the
// member index becomes 0, as it names a worker behind the ingress port only.
func setINA(f []byte, prio uint8, flags wire.Flags, job uint16, seq, bitmap uint32) {
	f[offPrio] = prio
	binary.BigEndian.PutUint16(f[offFlags:], uint16(flags))
	binary.BigEndian.PutUint16(f[offJob:], job)
	binary.BigEndian.PutUint32(f[offSeq:], seq)
	binary.BigEndian.PutUint32(f[offBitmap:], bitmap)
}

func setValues(f []byte, v *[wire.NumValues]int32) {
	for i, x := range v {
		binary.BigEndian.PutUint32(f[offValues+4*i:], uint32(x))
	}
}

// toPS copies an INA frame addressed to a job's PS: dst MAC and dst IP from ina_ps; the source
// addresses, TTL and everything else are kept.
func (s *Switch) toPS(in []byte, ps *PSEntry) []byte {
	f := s.frame(len(in))
	copy(f, in)
	copy(f[0:6], ps.MAC[:])
	copy(f[offIPDst:offIPDst+4], ps.IP[:])
	return f
}

// deparse does what the P4 deparser's checksum update does on every emitted IPv4 packet.
func deparse(f []byte, ina bool) {
	if ina {
		binary.BigEndian.PutUint16(f[offUDPCsum:], 0)
	}
	ihl := int(f[offIP]&0x0f) * 4
	if ihl < 20 || offIP+ihl > len(f) {
		ihl = 20
	}
	hdr := f[offIP : offIP+ihl]
	binary.BigEndian.PutUint16(hdr[10:], 0)
	binary.BigEndian.PutUint16(hdr[10:], wire.IPv4Checksum(hdr))
}
