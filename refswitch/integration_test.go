package refswitch

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"
	"github.com/mdlayher/packet"

	"github.com/inapack/inapack/p4src/wire"
)

func inaOf(b []byte) (*wire.Frame, bool) {
	f := &wire.Frame{}
	return f, f.Unmarshal(b) == nil
}

func isType(t wire.Type) func([]byte) bool {
	return func(b []byte) bool { f, ok := inaOf(b); return ok && f.INA.Type == t }
}

// TestVethAggregation runs the switch on three veths: two workers of job 7 (ports 1, 2) and its
// PS (port 3), injects frames on the peers and checks what comes out and what the counters say.
func TestVethAggregation(t *testing.T) {
	swIf, hostIf := makeVeths(t, "rsi", 3)
	w1, w2, ps := hostSocket(t, hostIf[0]), hostSocket(t, hostIf[1]), hostSocket(t, hostIf[2])
	cl, statsAddr := runSwitch(t, Config{}, swIf, 1, 2, 3)
	ctx := context.Background()
	installJob(t, cl)
	if err := cl.InsertMulticastGroup(ctx, 9, []uint32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := cl.InsertTableEntry(ctx, cl.NewTableEntry(tJob, map[string]client.MatchInterface{
		"hdr.ina.job_id":                 &client.ExactMatch{Value: u16(7)},
		"standard_metadata.ingress_port": &client.ExactMatch{Value: u16(3)},
		"member":                         &client.ExactMatch{Value: []byte{0}},
	}, cl.NewTableActionDirect(aResult, [][]byte{u16(9)}), nil)); err != nil {
		t.Fatal(err)
	}

	// An 802.1Q-tagged frame reaches the port with its tag stripped by the kernel; the port puts
	// it back and the model drops it as non-IPv4, as BMv2 does. Were it taken for worker 1's
	// packet, the untagged one below would be a duplicate and the sum 975.
	tagged := dataFrame(7, 4, 1, 1000)
	tagged = append(append(tagged[:12:12], 0x81, 0x00, 0x00, 0x05), tagged[12:]...)
	sendFrame(t, w1, tagged)
	sendFrame(t, w1, dataFrame(7, 4, 1, 10))
	sendFrame(t, w2, dataFrame(7, 4, 1, -25))
	sum, _ := inaOf(recv(t, ps, isType(wire.TypeData)))
	if sum.INA.Values[0] != -15 || sum.INA.Bitmap != 3 || sum.INA.Job != 7 || sum.INA.Seq != 1 {
		t.Fatalf("PS got %+v", sum.INA)
	}
	if sum.DstMAC.String() != "02:00:00:00:00:09" {
		t.Fatalf("sum sent to MAC %v, want the ina_ps entry's", sum.DstMAC)
	}

	res := dataFrame(7, 4, 1, -15)
	res[42] = wire.Version<<4 | uint8(wire.TypeResult)
	sendFrame(t, ps, res)
	for _, w := range []*packet.Conn{w1, w2} {
		if got, _ := inaOf(recv(t, w, isType(wire.TypeResult))); got.INA.Values[0] != -15 {
			t.Fatalf("worker got result %+v", got.INA)
		}
	}

	for ev, want := range map[wire.Event]int64{wire.EventClaimed: 1, wire.EventCompleted: 1, wire.EventResult: 1} {
		d, err := cl.ReadCounterEntry(ctx, "Ingress.ina_events", int64(ev))
		if err != nil || d.PacketCount != want {
			t.Errorf("ina_events[%v] = %v (%v), want %d", ev, d, err, want)
		}
	}
	resp, err := http.Get("http://" + statsAddr + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if !st.Configured || len(st.Ports) != 3 || st.Ports[0].RxPackets < 2 || st.Ports[0].TxPackets != 1 || st.Ports[2].TxPackets != 1 ||
		st.Ports[0].VLANTagged != 1 || st.Ports[0].KernelDrops != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestVethFaults duplicates every packet on egress and checks both copies arrive and are counted.
func TestVethFaults(t *testing.T) {
	swIf, hostIf := makeVeths(t, "rsf", 1)
	h := hostSocket(t, hostIf[0])
	cl, statsAddr := runSwitch(t, Config{Faults: FaultConfig{Dup: 1, Seed: 3}}, swIf)
	if err := cl.InsertTableEntry(context.Background(), cl.NewTableEntry(tIPv4, map[string]client.MatchInterface{
		"hdr.ipv4.dst_addr": &client.LpmMatch{Value: []byte{10, 0, 0, 0}, PLen: 24}},
		cl.NewTableActionDirect(aFwd, [][]byte{{2, 0, 0, 0, 0, 7}, u16(0)}), nil)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sendFrame(t, h, ipv4Frame(net.IP{10, 0, 0, 1}))
	}
	for range 6 {
		recv(t, h, func(b []byte) bool { return len(b) == 64 && b[5] == 7 })
	}
	resp, err := http.Get("http://" + statsAddr + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if p := st.Ports[0]; p.FaultDuplicated != 3 || p.TxPackets != 6 {
		t.Fatalf("port stats %+v", p)
	}
}
