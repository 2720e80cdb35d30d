package transport

import (
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/inapack/inapack/p4src/wire"
)

// Offsets in an untagged Ethernet frame (the kernel hands a packet socket's filter the frame
// without an 802.1Q tag it stripped).
const (
	offEtherType = 12
	offVersion   = 14 // IPv4 version and IHL
	offProto     = 14 + 9
	offDstPort   = 14 + 20 + 2
	offJob       = 14 + 20 + 8 + 4 // the INA header's job id
	offSeq       = 14 + 20 + 8 + 8 // the INA header's seq (TestOffsetsMatchTheWire checks both)
)

// JobFilter is a classic BPF program that keeps IPv4 frames only (the socket is bound to every
// protocol, see OpenPacketConfig) and, of those, drops an INA frame (IPv4 without options, UDP to
// wire.UDPPort) whose job id is not in jobs; every other IPv4 frame is accepted, and the agent
// judges it as before. It is what PacketConfig.Jobs attaches.
func JobFilter(jobs []uint16) ([]bpf.RawInstruction, error) { return LaneFilter(jobs, 0, 1) }

// LaneFilter is JobFilter for thread lane of lanes of a worker.Group or a PS on several threads:
// of its jobs' INA frames it keeps those whose seq is lane mod lanes, the chunks that thread owns,
// and every other IPv4 frame goes to lane 0 alone (lanes 1 is JobFilter). Each thread's socket on
// the interface then copies and wakes up for its own chunks only, as a fanout by chunk would hand
// them out, and a frame that is no chunk of the jobs is judged and counted once, by lane 0.
func LaneFilter(jobs []uint16, lane, lanes int) ([]bpf.RawInstruction, error) {
	if len(jobs) == 0 || len(jobs) > 200 {
		return nil, fmt.Errorf("job filter: %d jobs, want 1..200", len(jobs))
	}
	if lanes < 1 || lane < 0 || lane >= lanes {
		return nil, fmt.Errorf("job filter: lane %d of %d", lane, lanes)
	}
	n := uint8(len(jobs))
	// Instructions 0-7 check the headers, 8 loads the job id, 9..8+n compare it with each job and
	// 9+n drops. With one lane 10+n accepts; with several, 10+n..12+n check the seq's lane, 13+n
	// drops and 14+n accepts. other is where an IPv4 frame that is not INA goes.
	drop, accept, own := 9+n, 10+n, 10+n
	if lanes > 1 {
		accept = 14 + n
	}
	other := accept
	if lane != 0 {
		other = drop
	}
	skip := func(from, to uint8) uint8 { return to - from - 1 }
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.EtherTypeIPv4, SkipTrue: skip(1, drop)},
		bpf.LoadAbsolute{Off: offVersion, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x45, SkipTrue: skip(3, other)},
		bpf.LoadAbsolute{Off: offProto, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.ProtoUDP, SkipTrue: skip(5, other)},
		bpf.LoadAbsolute{Off: offDstPort, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.UDPPort, SkipTrue: skip(7, other)},
		bpf.LoadAbsolute{Off: offJob, Size: 2},
	}
	for i, j := range jobs {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(j), SkipTrue: skip(9+uint8(i), own)})
	}
	prog = append(prog, bpf.RetConstant{Val: 0})
	if lanes > 1 {
		prog = append(prog,
			bpf.LoadAbsolute{Off: offSeq, Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: uint32(lanes)},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(lane), SkipTrue: 1},
			bpf.RetConstant{Val: 0})
	}
	prog = append(prog, bpf.RetConstant{Val: 0xffff})
	return bpf.Assemble(prog)
}

// IPv4Filter is a classic BPF program that keeps IPv4 frames only: with it, a socket bound to
// every protocol receives what one bound to IPv4 would.
func IPv4Filter() ([]bpf.RawInstruction, error) {
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.EtherTypeIPv4, SkipTrue: 1},
		bpf.RetConstant{Val: 0xffff},
		bpf.RetConstant{Val: 0},
	})
}

// AutoLanes is the threads an agent (a worker.Group, a ps.Group) runs on when none are asked
// for, given the cores it may use: one per four cores, a power of two, at least one and at most
// 16. The other three quarters are the host's: a worker host trains (data loading, the framework's
// own threads, the GPU driver), and a PS host may serve other jobs. One thread moves a chunk in
// about a quarter of a microsecond of its own CPU (docs/agents.md), so 16 cover 100 Gbit/s of
// gradient; and on hosts under eight cores a second thread gained nothing measurable in memory
// (the other core is busy), so they get one.
func AutoLanes(cores int) int {
	n := 1
	for 2*n <= cores/4 && 2*n <= 16 {
		n *= 2
	}
	return n
}
