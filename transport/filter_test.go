package transport

import (
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/inapack/inapack/internal/vethtest"
	"github.com/inapack/inapack/p4src/wire"
)

func inaFrame(job uint16, typ wire.Type) []byte {
	f := wire.Frame{
		Addr: wire.Addr{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
			SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(10, 0, 0, 2).To4()},
		TTL: 64, SrcPort: wire.UDPPort,
		INA: wire.Header{Version: wire.Version, Type: typ, Job: job, Seq: 7},
	}
	return f.Marshal()
}

// filterVM loads a filter program into x/net/bpf's interpreter (the kernel's semantics for
// classic BPF, without a socket); used as filterVM(t)(JobFilter(...)).
func filterVM(t *testing.T) func([]bpf.RawInstruction, error) *bpf.VM {
	return func(raw []bpf.RawInstruction, err error) *bpf.VM {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var prog []bpf.Instruction
		for _, r := range raw {
			prog = append(prog, r.Disassemble())
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		return vm
	}
}

// TestJobFilter runs the program in x/net/bpf's interpreter: the kernel's semantics for classic
// BPF, without a socket.
func TestJobFilter(t *testing.T) {
	vm := filterVM(t)(JobFilter([]uint16{5, 300}))
	ipOpts := inaFrame(9, wire.TypeData)
	ipOpts[14] = 0x46 // IHL 6: not an INA packet the switch parses; the agent counts it
	otherUDP := inaFrame(9, wire.TypeData)
	otherUDP[offDstPort], otherUDP[offDstPort+1] = 0x12, 0x34
	arp := inaFrame(9, wire.TypeData)
	arp[offEtherType], arp[offEtherType+1] = 0x08, 0x06
	for _, c := range []struct {
		name  string
		frame []byte
		keep  bool
	}{
		{"own job data", inaFrame(5, wire.TypeData), true},
		{"own job result", inaFrame(5, wire.TypeResult), true},
		{"second own job", inaFrame(300, wire.TypeResult), true},
		{"other job result", inaFrame(6, wire.TypeResult), false},
		{"other job data", inaFrame(1000, wire.TypeData), false},
		{"job id with an own job's low byte", inaFrame(5+256, wire.TypeResult), false},
		{"IPv4 options", ipOpts, true},
		{"other UDP port", otherUDP, true},
		{"not IPv4", arp, false},         // the socket is bound to every protocol: the filter keeps IPv4
		{"runt", []byte{1, 2, 3}, false}, // the kernel drops a frame too short to read, as here
	} {
		n, err := vm.Run(c.frame)
		if err != nil && c.keep {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := n > 0; got != c.keep {
			t.Errorf("%s: kept %v, want %v", c.name, got, c.keep)
		}
	}
}

func TestIPv4Filter(t *testing.T) {
	raw, err := IPv4Filter()
	if err != nil {
		t.Fatal(err)
	}
	var prog []bpf.Instruction
	for _, r := range raw {
		prog = append(prog, r.Disassemble())
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	arp := inaFrame(9, wire.TypeData)
	arp[offEtherType], arp[offEtherType+1] = 0x08, 0x06
	ipv6 := inaFrame(9, wire.TypeData)
	ipv6[offEtherType], ipv6[offEtherType+1] = 0x86, 0xdd
	for _, c := range []struct {
		name  string
		frame []byte
		keep  bool
	}{
		{"INA", inaFrame(5, wire.TypeData), true},
		{"ARP", arp, false},
		{"IPv6", ipv6, false},
		{"runt", []byte{1, 2, 3}, false},
	} {
		n, err := vm.Run(c.frame)
		if err != nil && c.keep {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := n > 0; got != c.keep {
			t.Errorf("%s: kept %v, want %v", c.name, got, c.keep)
		}
	}
}

func TestJobFilterBounds(t *testing.T) {
	if _, err := JobFilter(nil); err == nil {
		t.Error("no jobs: no error")
	}
	if _, err := JobFilter(make([]uint16, 201)); err == nil {
		t.Error("201 jobs: no error")
	}
	if _, err := JobFilter(make([]uint16, 200)); err != nil {
		t.Errorf("200 jobs: %v", err)
	}
}

// TestPacketJobFilter attaches the filter to a real socket: another job's frames and frames that
// are not IPv4 never reach the ring, the socket's own job's do (root only); a socket without jobs
// keeps out what is not IPv4 too.
func TestPacketJobFilter(t *testing.T) {
	as, bs := vethtest.Pairs(t, "agf", 1, 0)
	l0, l1 := as[0], bs[0]
	a, err := OpenPacket(l0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPacketConfig(l1, PacketConfig{Jobs: []uint16{5}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	buf := make([]byte, 2048)
	var f wire.Frame
	// Until the link carries frames (see TestPacket), then count what arrives of 20 + 20.
	giveUp := time.Now().Add(10 * time.Second)
	for ready := false; !ready; {
		if time.Now().After(giveUp) {
			t.Fatal("no frame of job 5 crossed the veth pair in 10s")
		}
		_ = a.Send(inaFrame(5, wire.TypeResult))
		n, err := b.Recv(buf, time.Now().Add(50*time.Millisecond))
		ready = err == nil && f.Unmarshal(buf[:n]) == nil && f.INA.Job == 5
	}
	arp := inaFrame(5, wire.TypeResult)
	arp[offEtherType], arp[offEtherType+1] = 0x08, 0x06
	// count sends 20 frames of job 6, 20 of job 5 and 20 typed ARP from one end, and returns how
	// many of job 5 the other end received; it fails on any other frame.
	count := func(from, to *Packet) int {
		for i := 0; i < 20; i++ {
			for _, fr := range [][]byte{inaFrame(6, wire.TypeResult), inaFrame(5, wire.TypeResult), arp} {
				if err := from.Send(fr); err != nil {
					t.Fatal(err)
				}
			}
		}
		own := 0
		for {
			n, err := to.Recv(buf, time.Now().Add(200*time.Millisecond))
			if errors.Is(err, ErrTimeout) {
				return own
			}
			if err != nil {
				t.Fatal(err)
			}
			if buf[offEtherType] != 0x08 || buf[offEtherType+1] != 0x00 {
				t.Fatalf("received a frame of EtherType %#x", buf[offEtherType:offEtherType+2])
			}
			if err := f.Unmarshal(buf[:n]); err != nil {
				t.Fatalf("received a frame that is not INA: %v", err)
			}
			if f.INA.Job == 5 {
				own++
			} else if to == b {
				t.Fatalf("received a frame of job %d through a filter for job 5", f.INA.Job)
			}
		}
	}
	if own := count(a, b); own < 20 {
		t.Errorf("received %d of the 20 frames of job 5 (at least; some of the first may be late)", own)
	}
	if own := count(b, a); own != 20 {
		t.Errorf("without jobs: received %d of the 20 frames of job 5", own)
	}
}

// A thread's socket keeps its own job's INA frames whose seq is its lane mod the lanes; every
// other IPv4 frame goes to lane 0 alone, so every frame is judged by one thread at most (before,
// lanes past 0 took a frame that is not INA by whatever bytes sat where an INA seq would).
func TestLaneFilter(t *testing.T) {
	const lanes = 3
	var vms [lanes]*bpf.VM
	for k := range vms {
		vms[k] = filterVM(t)(LaneFilter([]uint16{5, 300}, k, lanes))
	}
	withSeq := func(job uint16, seq uint32) []byte {
		b := inaFrame(job, wire.TypeResult)
		b[offSeq], b[offSeq+1], b[offSeq+2], b[offSeq+3] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
		return b
	}
	otherUDP := withSeq(9, 7) // 7 mod 3 = 1 where an INA seq would be
	otherUDP[offDstPort], otherUDP[offDstPort+1] = 0x12, 0x34
	ipOpts := withSeq(5, 8)
	ipOpts[14] = 0x46
	arp := withSeq(5, 7)
	arp[offEtherType], arp[offEtherType+1] = 0x08, 0x06
	for _, c := range []struct {
		name  string
		frame []byte
		lane  int // the lane that keeps it; -1: none
	}{
		{"own job, seq 7", withSeq(5, 7), 1},
		{"second own job, seq 2^31+2", withSeq(300, 1<<31+2), 1}, // 2^31+2 = 1 mod 3, read unsigned
		{"own job, seq 8", withSeq(5, 8), 2},
		{"own job, seq 9", withSeq(5, 9), 0},
		{"other job", withSeq(6, 7), -1},
		{"other UDP port", otherUDP, 0},
		{"IPv4 options", ipOpts, 0},
		{"not IPv4", arp, -1},
		{"runt", []byte{1, 2, 3}, -1},
	} {
		for k, vm := range vms {
			n, err := vm.Run(c.frame)
			if err != nil && k == c.lane {
				t.Errorf("%s, lane %d: %v", c.name, k, err)
			}
			if got := n > 0; got != (k == c.lane) {
				t.Errorf("%s: lane %d kept it %v, want only lane %d to", c.name, k, got, c.lane)
			}
		}
	}
	for _, bad := range [][2]int{{0, 0}, {3, 3}, {-1, 2}} {
		if _, err := LaneFilter([]uint16{5}, bad[0], bad[1]); err == nil {
			t.Errorf("lane %d of %d: no error", bad[0], bad[1])
		}
	}
	// 200 jobs and several lanes: the jumps still fit.
	many := make([]uint16, 200)
	for i := range many {
		many[i] = uint16(i + 1)
	}
	vm := filterVM(t)(LaneFilter(many, 1, 2))
	if n, _ := vm.Run(withSeq(200, 3)); n == 0 {
		t.Error("200 jobs: job 200's seq 3 not kept by lane 1 of 2")
	}
}

// The filters read the job and the seq where the wire codec writes them.
func TestOffsetsMatchTheWire(t *testing.T) {
	f := wire.Frame{Addr: wire.Addr{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(10, 0, 0, 2).To4()},
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 0x0a0b, Seq: 0x01020304}}
	b := f.Marshal()
	if b[offJob] != 0x0a || b[offJob+1] != 0x0b || b[offSeq] != 1 || b[offSeq+3] != 4 {
		t.Errorf("job at %d reads %x, seq at %d reads %x", offJob, b[offJob:offJob+2], offSeq, b[offSeq:offSeq+4])
	}
}

// An agent's default threads: one per four cores, a power of two, from one to 16.
func TestAutoLanes(t *testing.T) {
	for cores, want := range map[int]int{0: 1, 1: 1, 2: 1, 7: 1, 8: 2, 15: 2, 16: 4, 32: 8, 63: 8, 64: 16, 256: 16} {
		if got := AutoLanes(cores); got != want {
			t.Errorf("AutoLanes(%d) = %d, want %d", cores, got, want)
		}
	}
}
