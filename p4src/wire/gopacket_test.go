package wire

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// TestFrameMatchesGopacket builds the same frame with gopacket's layers and compares bytes, so the
// Ethernet, IPv4 (checksum included) and UDP encoding are checked by an independent codec.
func TestFrameMatchesGopacket(t *testing.T) {
	f := sampleFrame()
	payload := make([]byte, PayloadLen)
	if err := f.INA.MarshalTo(payload); err != nil {
		t.Fatal(err)
	}
	eth := &layers.Ethernet{SrcMAC: f.SrcMAC, DstMAC: f.DstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: f.TOS, Id: f.ID, TTL: f.TTL,
		Protocol: layers.IPProtocolUDP, SrcIP: f.SrcIP, DstIP: f.DstIP}
	udp := &layers.UDP{SrcPort: layers.UDPPort(f.SrcPort), DstPort: UDPPort}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	want := buf.Bytes()
	binary.BigEndian.PutUint16(want[40:], 0) // gopacket computes a UDP checksum; INA sends 0
	got := f.Marshal()
	if !bytes.Equal(got, want) {
		for i := range got {
			if i < len(want) && got[i] != want[i] {
				t.Errorf("byte %d: got %#02x, gopacket %#02x", i, got[i], want[i])
			}
		}
		t.Fatalf("frame differs from gopacket's (len %d vs %d)", len(got), len(want))
	}

	// And gopacket decodes our frame into the layers we meant.
	p := gopacket.NewPacket(got, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		t.Fatalf("gopacket cannot decode the frame: %v", el.Error())
	}
	dip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	dudp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if dip.Length != IPv4TotalLen || dudp.Length != UDPLen || uint16(dudp.DstPort) != UDPPort ||
		!bytes.Equal(dudp.Payload, payload) {
		t.Errorf("gopacket sees IPv4 length %d, UDP length %d, port %d", dip.Length, dudp.Length, dudp.DstPort)
	}
	// gopacket's own checksum of our IPv4 header must match the one we wrote.
	ipb := append([]byte{}, got[14:34]...)
	csum := binary.BigEndian.Uint16(ipb[10:])
	binary.BigEndian.PutUint16(ipb[10:], 0)
	if IPv4Checksum(ipb) != csum || dip.Checksum != csum {
		t.Errorf("IPv4 checksum %#04x, gopacket read %#04x", csum, dip.Checksum)
	}
}
