package conformance

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"strings"

	"github.com/inapack/inapack/p4src/wire"
)

// Field is one decoded field of a frame.
type Field struct{ Name, Value string }

// Decode lists a frame's fields layer by layer, as far as the bytes go. It never fails: a layer
// cut short shows as a "rest" field in hex, so malformed packets can be compared too.
func Decode(f []byte) []Field {
	var out []Field
	add := func(n, format string, a ...any) { out = append(out, Field{n, fmt.Sprintf(format, a...)}) }
	add("len", "%d", len(f))
	rest := func(b []byte) {
		if len(b) > 0 {
			add("rest", "%x", b)
		}
	}
	if len(f) < 14 {
		rest(f)
		return out
	}
	add("eth.dst", "%s", net.HardwareAddr(f[0:6]))
	add("eth.src", "%s", net.HardwareAddr(f[6:12]))
	et := binary.BigEndian.Uint16(f[12:])
	add("eth.type", "%#04x", et)
	if et != wire.EtherTypeIPv4 || len(f) < 34 {
		rest(f[14:])
		return out
	}
	ip := f[14:34]
	add("ipv4.version", "%d", ip[0]>>4)
	add("ipv4.ihl", "%d", ip[0]&0x0f)
	add("ipv4.tos", "%d", ip[1])
	add("ipv4.total_length", "%d", binary.BigEndian.Uint16(ip[2:]))
	add("ipv4.id", "%d", binary.BigEndian.Uint16(ip[4:]))
	add("ipv4.flags_frag", "%#04x", binary.BigEndian.Uint16(ip[6:]))
	add("ipv4.ttl", "%d", ip[8])
	add("ipv4.protocol", "%d", ip[9])
	add("ipv4.checksum", "%#04x", binary.BigEndian.Uint16(ip[10:]))
	add("ipv4.src", "%s", net.IP(ip[12:16]))
	add("ipv4.dst", "%s", net.IP(ip[16:20]))
	if ip[9] != wire.ProtoUDP || len(f) < 42 {
		rest(f[34:])
		return out
	}
	u := f[34:42]
	add("udp.sport", "%d", binary.BigEndian.Uint16(u[0:]))
	add("udp.dport", "%d", binary.BigEndian.Uint16(u[2:]))
	add("udp.length", "%d", binary.BigEndian.Uint16(u[4:]))
	add("udp.checksum", "%#04x", binary.BigEndian.Uint16(u[6:]))
	if binary.BigEndian.Uint16(u[2:]) != wire.UDPPort || len(f) < 42+wire.HeaderLen {
		rest(f[42:])
		return out
	}
	h := f[42:]
	add("ina.version", "%d", h[0]>>4)
	add("ina.type", "%s", wire.Type(h[0]&0x0f))
	add("ina.priority", "%d", h[1])
	add("ina.member", "%d", h[2]>>4)
	add("ina.flags", "%s", wire.Flags(binary.BigEndian.Uint16(h[2:]))&wire.FlagsMask)
	add("ina.job", "%d", binary.BigEndian.Uint16(h[4:]))
	add("ina.slot", "%d", binary.BigEndian.Uint16(h[6:]))
	add("ina.seq", "%d", binary.BigEndian.Uint32(h[8:]))
	add("ina.bitmap", "%#x", binary.BigEndian.Uint32(h[12:]))
	vals := h[wire.HeaderLen:]
	for i := 0; i < wire.NumValues && 4*i+4 <= len(vals); i++ {
		add(fmt.Sprintf("ina.values[%d]", i), "%d", int32(binary.BigEndian.Uint32(vals[4*i:])))
	}
	rest(vals[4*min(len(vals)/4, wire.NumValues):])
	return out
}

// Diff describes how got differs from want, one line per differing field ("" if they are equal).
func Diff(want, got []byte) string {
	if string(want) == string(got) {
		return ""
	}
	wf, gf := Decode(want), Decode(got)
	gm := map[string]string{}
	for _, f := range gf {
		gm[f.Name] = f.Value
	}
	var lines []string
	seen := map[string]bool{}
	for _, f := range wf {
		seen[f.Name] = true
		g, ok := gm[f.Name]
		if !ok {
			g = "(absent)"
		}
		if g != f.Value {
			lines = append(lines, fmt.Sprintf("  %s: want %s, got %s", f.Name, f.Value, g))
		}
	}
	for _, f := range gf {
		if !seen[f.Name] {
			lines = append(lines, fmt.Sprintf("  %s: want (absent), got %s", f.Name, f.Value))
		}
	}
	if len(lines) == 0 { // same fields, different bytes the decoder does not show
		lines = append(lines, "  bytes: want "+hex.EncodeToString(want)+"\n         got  "+hex.EncodeToString(got))
	}
	return strings.Join(lines, "\n")
}

// Summary is a one-line description of a frame for mismatch reports.
func Summary(f []byte) string {
	m := map[string]string{}
	for _, x := range Decode(f) {
		m[x.Name] = x.Value
	}
	if t, ok := m["ina.type"]; ok {
		return fmt.Sprintf("INA %s job %s seq %s slot %s flags %s bitmap %s to %s", t, m["ina.job"],
			m["ina.seq"], m["ina.slot"], m["ina.flags"], m["ina.bitmap"], m["ipv4.dst"])
	}
	if d, ok := m["ipv4.dst"]; ok {
		return fmt.Sprintf("IPv4 %s -> %s proto %s, %s bytes", m["ipv4.src"], d, m["ipv4.protocol"], m["len"])
	}
	return fmt.Sprintf("frame of %s bytes", m["len"])
}
