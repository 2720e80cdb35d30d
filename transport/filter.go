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

// LaneFilter is JobFilter for thread lane of lanes of a worker.Group: of its jobs' INA frames it
// keeps those whose seq is lane mod lanes, the chunks that thread owns (lanes 1 is JobFilter).
// Each thread's socket on the interface then copies and wakes up for its own results only, as a
// fanout by chunk would hand them out.
func LaneFilter(jobs []uint16, lane, lanes int) ([]bpf.RawInstruction, error) {
	if len(jobs) == 0 || len(jobs) > 200 {
		return nil, fmt.Errorf("job filter: %d jobs, want 1..200", len(jobs))
	}
	if lanes < 1 || lane < 0 || lane >= lanes {
		return nil, fmt.Errorf("job filter: lane %d of %d", lane, lanes)
	}
	n := uint8(len(jobs))
	// Instructions 0-7 check the headers, 8 loads the job id, 9..8+n compare it with each job,
	// 9+n drops and 10+n accepts. A jump from instruction i to accept skips 10+n-i-1, to drop
	// one fewer.
	toAccept := func(i uint8) uint8 { return 10 + n - i - 1 }
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offEtherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.EtherTypeIPv4, SkipTrue: toAccept(1) - 1},
		bpf.LoadAbsolute{Off: offVersion, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x45, SkipTrue: toAccept(3)},
		bpf.LoadAbsolute{Off: offProto, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.ProtoUDP, SkipTrue: toAccept(5)},
		bpf.LoadAbsolute{Off: offDstPort, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: wire.UDPPort, SkipTrue: toAccept(7)},
		bpf.LoadAbsolute{Off: offJob, Size: 2},
	}
	if lanes == 1 {
		for i, j := range jobs {
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(j), SkipTrue: toAccept(9 + uint8(i))})
		}
		prog = append(prog, bpf.RetConstant{Val: 0}, bpf.RetConstant{Val: 0xffff})
		return bpf.Assemble(prog)
	}
	// An own job's frame goes on to the lane check after the drop (10+n): a jump from 9+i skips
	// n-i-1 comparisons and the drop.
	for i, j := range jobs {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(j), SkipTrue: n - uint8(i)})
	}
	prog = append(prog,
		bpf.RetConstant{Val: 0},
		bpf.LoadAbsolute{Off: offSeq, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: uint32(lanes)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(lane), SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: 0xffff})
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
