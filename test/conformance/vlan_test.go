package conformance

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestVLANTagBuilt(t *testing.T) {
	var p Packet
	if err := json.Unmarshal([]byte(`{"vlan": {"vid": 5, "pcp": 3, "tpid": 34984}, "ipv4": {"dst": "10.0.9.5"}}`), &p); err != nil {
		t.Fatal(err)
	}
	tagged, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	p.VLAN = nil
	plain, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, plain[:12]...), 0x88, 0xa8, 0x60, 0x05), plain[12:]...)
	if !bytes.Equal(tagged, want) {
		t.Fatalf("tagged frame\n%x\nwant\n%x", tagged, want)
	}
	if err := json.Unmarshal([]byte(`{"vlan": {"vid": 4096}}`), &p); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Build(); err == nil {
		t.Error("VID 4096 accepted")
	}
}
