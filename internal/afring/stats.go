package afring

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

type counters struct {
	rx, truncated, vlan, polls    atomic.Uint64
	tx, txErrors, txFull, flushes atomic.Uint64
}

// Stats are a socket's counters since Open.
type Stats struct {
	RX        uint64 // frames handed to Receive's callback
	Truncated uint64 // frames larger than a ring slot: dropped
	VLAN      uint64 // frames whose 802.1Q/802.1ad tag was put back (also in RX)
	// KernelDrops counts frames the kernel dropped because the RX ring was full
	// (PACKET_STATISTICS tp_drops).
	KernelDrops uint64
	Polls       uint64 // waits in ppoll (receive ring empty, or transmit ring full)
	TX          uint64 // frames queued for transmission
	TXErrors    uint64 // frames refused: too large, or rejected by the device
	TXRingFull  uint64 // times Queue found the TX ring full and had to wait
	Flushes     uint64 // send system calls
}

// Stats returns the counters, reading the kernel's drop counter.
func (s *Socket) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	if !s.closed.Load() {
		var ks unix.TpacketStats
		l := uint32(unsafe.Sizeof(ks))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
			uintptr(unsafe.Pointer(&ks)), uintptr(unsafe.Pointer(&l)), 0)
		if e == 0 {
			s.kdrops += uint64(ks.Drops)
		}
	}
	c := &s.st
	return Stats{RX: c.rx.Load(), Truncated: c.truncated.Load(), VLAN: c.vlan.Load(), KernelDrops: s.kdrops,
		Polls: c.polls.Load(), TX: c.tx.Load(), TXErrors: c.txErrors.Load(), TXRingFull: c.txFull.Load(),
		Flushes: c.flushes.Load()}
}
