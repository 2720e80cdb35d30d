package conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"

	"github.com/inapack/inapack/p4src/wire"
)

// Packet is a packet described by fields; every field has a default (test/vectors/README.md).
// A layer set to null is left out, and so is every layer above it.
type Packet struct {
	Eth        *EthSpec
	VLAN       *VLANSpec
	IPv4       *IPv4Spec
	UDP        *UDPSpec
	INA        *INASpec
	NoIPv4     bool // "ipv4": null
	NoUDP      bool // "udp": null
	NoINA      bool // "ina": null
	ValuesFill *int32
	PayloadHex string // a raw payload after the last layer present, instead of the INA header
	Truncate   *int
	AppendHex  string
}

// EthSpec overrides Ethernet fields.
type EthSpec struct {
	Dst  *string `json:"dst"`
	Src  *string `json:"src"`
	Type *uint16 `json:"type"`
}

// VLANSpec is an 802.1Q tag (802.1ad with tpid 0x88a8) put after the MAC addresses; eth.type
// then follows the tag.
type VLANSpec struct {
	VID  *uint16 `json:"vid"`
	PCP  *uint8  `json:"pcp"`
	TPID *uint16 `json:"tpid"`
}

// IPv4Spec overrides IPv4 fields. IHL, Version, TotalLength and Checksum change only the field,
// never the layout (the header is always 20 bytes), so malformed headers can be written.
type IPv4Spec struct {
	Src         *string `json:"src"`
	Dst         *string `json:"dst"`
	TTL         *uint8  `json:"ttl"`
	TOS         *uint8  `json:"tos"`
	ID          *uint16 `json:"id"`
	Protocol    *uint8  `json:"protocol"`
	Version     *uint8  `json:"version"`
	IHL         *uint8  `json:"ihl"`
	TotalLength *uint16 `json:"total_length"`
	Flags       *uint8  `json:"flags"`       // 3 bits: reserved, DF (2), MF (1)
	FragOffset  *uint16 `json:"frag_offset"` // 13 bits, in 8-byte units
	Checksum    *uint16 `json:"checksum"`    // default: computed
}

// UDPSpec overrides UDP fields.
type UDPSpec struct {
	Sport    *uint16 `json:"sport"`
	Dport    *uint16 `json:"dport"`
	Length   *uint16 `json:"length"`
	Checksum *uint16 `json:"checksum"` // default 0, as the switch emits
}

// INASpec overrides INA header fields. Type is "data", "result" or a number; Flags a list of
// names or a number.
type INASpec struct {
	Version  *uint8          `json:"version"`
	Type     json.RawMessage `json:"type"`
	Priority *uint8          `json:"priority"`
	Member   *uint8          `json:"member"`
	Flags    json.RawMessage `json:"flags"`
	Job      *uint16         `json:"job"`
	Slot     *uint16         `json:"slot"`
	Seq      *uint32         `json:"seq"`
	Bitmap   *uint32         `json:"bitmap"`
	Values   []int32         `json:"values"`
}

// UnmarshalJSON keeps the difference between an omitted layer (defaults) and a null one (absent).
func (p *Packet) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = Packet{}
	isNull := func(r json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(r), []byte("null")) }
	for k, raw := range m {
		var err error
		switch k {
		case "eth":
			p.Eth = new(EthSpec)
			err = strict(raw, p.Eth)
		case "vlan":
			p.VLAN = new(VLANSpec)
			err = strict(raw, p.VLAN)
		case "ipv4":
			if p.NoIPv4 = isNull(raw); !p.NoIPv4 {
				p.IPv4 = new(IPv4Spec)
				err = strict(raw, p.IPv4)
			}
		case "udp":
			if p.NoUDP = isNull(raw); !p.NoUDP {
				p.UDP = new(UDPSpec)
				err = strict(raw, p.UDP)
			}
		case "ina":
			if p.NoINA = isNull(raw); !p.NoINA {
				p.INA = new(INASpec)
				err = strict(raw, p.INA)
			}
		case "values_fill":
			err = json.Unmarshal(raw, &p.ValuesFill)
		case "payload_hex":
			err = json.Unmarshal(raw, &p.PayloadHex)
		case "truncate":
			err = json.Unmarshal(raw, &p.Truncate)
		case "append_hex":
			err = json.Unmarshal(raw, &p.AppendHex)
		default:
			err = fmt.Errorf("unknown packet field %q", k)
		}
		if err != nil {
			return fmt.Errorf("packet %s: %w", k, err)
		}
	}
	return nil
}

func strict(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// Build returns the packet's bytes.
func (p *Packet) Build() ([]byte, error) {
	var e EthSpec
	if p.Eth != nil {
		e = *p.Eth
	}
	dst, err := net.ParseMAC(or(e.Dst, "00:00:00:00:00:fe"))
	if err != nil {
		return nil, err
	}
	src, err := net.ParseMAC(or(e.Src, "00:00:00:00:00:01"))
	if err != nil {
		return nil, err
	}
	if len(dst) != 6 || len(src) != 6 {
		return nil, fmt.Errorf("eth: MAC addresses must be 6 bytes")
	}
	f := append(append([]byte{}, dst...), src...)
	f = binary.BigEndian.AppendUint16(f, or(e.Type, wire.EtherTypeIPv4))

	payload, err := hex.DecodeString(p.PayloadHex)
	if err != nil {
		return nil, fmt.Errorf("payload_hex: %w", err)
	}
	if !p.NoIPv4 {
		ip, err := p.buildIPv4(payload)
		if err != nil {
			return nil, err
		}
		f = append(f, ip...)
	} else {
		f = append(f, payload...)
	}
	if v := p.VLAN; v != nil {
		vid, pcp := or(v.VID, 0), or(v.PCP, 0)
		if vid > 0xfff || pcp > 7 {
			return nil, fmt.Errorf("vlan: vid %d or pcp %d out of range", vid, pcp)
		}
		tag := binary.BigEndian.AppendUint16(nil, or(v.TPID, 0x8100))
		tag = binary.BigEndian.AppendUint16(tag, uint16(pcp)<<13|vid)
		f = append(f[:12], append(tag, f[12:]...)...)
	}
	if p.Truncate != nil {
		if *p.Truncate < 0 || *p.Truncate > len(f) {
			return nil, fmt.Errorf("truncate %d outside 0..%d", *p.Truncate, len(f))
		}
		f = f[:*p.Truncate]
	}
	tail, err := hex.DecodeString(p.AppendHex)
	if err != nil {
		return nil, fmt.Errorf("append_hex: %w", err)
	}
	return append(f, tail...), nil
}

// buildIPv4 returns the IPv4 header and everything above it.
func (p *Packet) buildIPv4(payload []byte) ([]byte, error) {
	var s IPv4Spec
	if p.IPv4 != nil {
		s = *p.IPv4
	}
	var body []byte
	switch {
	case p.NoUDP:
		body = payload
	default:
		u, err := p.buildUDP(payload)
		if err != nil {
			return nil, err
		}
		body = u
	}
	srcIP, err := parseIP4(or(s.Src, "10.0.0.1"))
	if err != nil {
		return nil, err
	}
	dstIP, err := parseIP4(or(s.Dst, "10.0.0.100"))
	if err != nil {
		return nil, err
	}
	h := make([]byte, 20)
	h[0] = or(s.Version, 4)<<4 | or(s.IHL, 5)&0x0f
	h[1] = or(s.TOS, 0)
	binary.BigEndian.PutUint16(h[2:], or(s.TotalLength, uint16(20+len(body))))
	binary.BigEndian.PutUint16(h[4:], or(s.ID, 1))
	if or(s.Flags, 0) > 7 || or(s.FragOffset, 0) > 0x1fff {
		return nil, fmt.Errorf("ipv4: flags %d or frag_offset %d does not fit", or(s.Flags, 0), or(s.FragOffset, 0))
	}
	binary.BigEndian.PutUint16(h[6:], uint16(or(s.Flags, 0))<<13|or(s.FragOffset, 0))
	h[8] = or(s.TTL, 64)
	h[9] = or(s.Protocol, wire.ProtoUDP)
	copy(h[12:], srcIP)
	copy(h[16:], dstIP)
	binary.BigEndian.PutUint16(h[10:], or(s.Checksum, wire.IPv4Checksum(h)))
	return append(h, body...), nil
}

func (p *Packet) buildUDP(payload []byte) ([]byte, error) {
	var s UDPSpec
	if p.UDP != nil {
		s = *p.UDP
	}
	body := payload
	if p.PayloadHex == "" && !p.NoINA {
		b, err := p.buildINA()
		if err != nil {
			return nil, err
		}
		body = b
	}
	u := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint16(u[0:], or(s.Sport, wire.UDPPort))
	binary.BigEndian.PutUint16(u[2:], or(s.Dport, wire.UDPPort))
	binary.BigEndian.PutUint16(u[4:], or(s.Length, uint16(8+len(body))))
	binary.BigEndian.PutUint16(u[6:], or(s.Checksum, 0))
	return append(u, body...), nil
}

func (p *Packet) buildINA() ([]byte, error) {
	var s INASpec
	if p.INA != nil {
		s = *p.INA
	}
	typ, err := parseType(s.Type)
	if err != nil {
		return nil, err
	}
	flags, err := parseFlags(s.Flags)
	if err != nil {
		return nil, err
	}
	if or(s.Member, 0) >= wire.MaxMembers {
		return nil, fmt.Errorf("ina: member %d does not fit 4 bits", or(s.Member, 0))
	}
	h := wire.Header{
		Version: or(s.Version, wire.Version), Type: typ, Priority: or(s.Priority, 0), Member: or(s.Member, 0), Flags: flags,
		Job: or(s.Job, 1), Slot: or(s.Slot, 0), Seq: or(s.Seq, 0), Bitmap: or(s.Bitmap, 0),
	}
	if len(s.Values) > wire.NumValues {
		return nil, fmt.Errorf("ina: %d values, at most %d", len(s.Values), wire.NumValues)
	}
	if p.ValuesFill != nil {
		if s.Values != nil {
			return nil, fmt.Errorf("ina: values and values_fill both given")
		}
		for i := range h.Values {
			h.Values[i] = *p.ValuesFill
		}
	}
	copy(h.Values[:], s.Values)
	b := make([]byte, wire.PayloadLen)
	if err := h.MarshalTo(b); err != nil {
		return nil, err
	}
	return b, nil
}

func parseIP4(s string) ([]byte, error) {
	ip := net.ParseIP(s).To4()
	if ip == nil {
		return nil, fmt.Errorf("%q is not an IPv4 address", s)
	}
	return ip, nil
}

func parseType(raw json.RawMessage) (wire.Type, error) {
	if len(raw) == 0 {
		return wire.TypeData, nil
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch name {
		case "data":
			return wire.TypeData, nil
		case "result":
			return wire.TypeResult, nil
		}
		return 0, fmt.Errorf("ina: unknown type %q", name)
	}
	var n uint8
	if err := json.Unmarshal(raw, &n); err != nil || n > 15 {
		return 0, fmt.Errorf("ina: type %s is neither a name nor a 4-bit number", raw)
	}
	return wire.Type(n), nil
}

func parseFlags(raw json.RawMessage) (wire.Flags, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		var f wire.Flags
		for _, n := range names {
			b, ok := wire.FlagByName(n)
			if !ok {
				return 0, fmt.Errorf("ina: unknown flag %q", n)
			}
			f |= b
		}
		return f, nil
	}
	var n uint16
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("ina: flags %s are neither names nor a number", raw)
	}
	if wire.Flags(n)&^wire.FlagsMask != 0 {
		return 0, fmt.Errorf("ina: flags %#x above 12 bits: the word's top 4 bits are the member field", n)
	}
	return wire.Flags(n), nil
}
