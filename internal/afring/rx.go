package afring

import (
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Receive calls fn for each frame waiting in the RX ring, at most max of them (max <= 0: no
// limit), and returns how many it handed over. When none is waiting it first waits up to timeout
// (negative: until a frame arrives or Close; zero: not at all). The frame passed to fn is the ring
// slot itself (or a scratch buffer when an 802.1Q tag has to be put back): it is valid only until
// fn returns.
//
// The kernel strips an 802.1Q or 802.1ad tag from a received frame before AF_PACKET sees it and
// reports it beside the frame; Receive puts it back, so fn sees the frame as it was on the wire.
func (s *Socket) Receive(timeout time.Duration, max int, fn func(frame []byte)) (int, error) {
	s.rxMu.Lock()
	defer s.rxMu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		n := s.drain(max, fn)
		if n > 0 || timeout == 0 {
			return n, nil
		}
		wait := timeout
		if timeout > 0 {
			if wait = time.Until(deadline); wait <= 0 {
				return 0, nil
			}
		}
		if err := s.wait(unix.POLLIN, wait); err != nil {
			return 0, err
		}
	}
}

// wait returns when the socket may have events (a frame in the RX ring for POLLIN, a free TX
// slot for POLLOUT), on Close, or after timeout (negative: no limit).
func (s *Socket) wait(events int16, timeout time.Duration) error {
	if s.raw == nil {
		return s.poll(events, timeout)
	}
	s.st.polls.Add(1)
	var dl time.Time
	if timeout >= 0 {
		dl = time.Now().Add(timeout)
	}
	var err error
	if events == unix.POLLIN {
		_ = s.file.SetReadDeadline(dl)
		s.rxWait.first = true
		err = s.raw.Read(s.rxWait.fn)
	} else {
		_ = s.file.SetWriteDeadline(dl)
		s.txWait.first = true
		err = s.raw.Write(s.txWait.fn)
	}
	switch {
	case s.closed.Load():
		return ErrClosed
	case err == nil || errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	}
	return err
}

// pollWait is the callback RawConn.Read/Write call: made once per direction, so waiting allocates
// nothing. The runtime arms the poller before the first call, which looks at the ring once more:
// a frame (or free slot) that came after the caller's last look is not missed, and the wait ends
// at once. Later calls come after the poller reported the socket ready.
type pollWait struct {
	first bool
	fn    func(uintptr) bool
}

func newPollWait(s *Socket, events int16) *pollWait {
	w := &pollWait{}
	w.fn = func(uintptr) bool {
		if w.first {
			w.first = false
			return s.ready(events)
		}
		return true
	}
	return w
}

// ready reports whether the ring already has what events waits for.
func (s *Socket) ready(events int16) bool {
	if events == unix.POLLIN {
		return status(s.hdr(s.rx, s.rxHead))&unix.TP_STATUS_USER != 0
	}
	return status(s.hdr(s.tx, s.txHead)) == unix.TP_STATUS_AVAILABLE
}

// drain hands every ready slot to fn and gives it back to the kernel.
func (s *Socket) drain(max int, fn func([]byte)) int {
	n := 0
	for max <= 0 || n < max {
		h := s.hdr(s.rx, s.rxHead)
		st := status(h)
		if st&unix.TP_STATUS_USER == 0 {
			break
		}
		slot := s.rx[s.rxHead*s.frameSize : (s.rxHead+1)*s.frameSize]
		off, snap := int(h.Mac), int(h.Snaplen)
		switch {
		case off+snap > len(slot) || snap < int(h.Len):
			s.st.truncated.Add(1)
		case st&unix.TP_STATUS_VLAN_VALID != 0 && snap >= 12:
			tpid := uint16(unix.ETH_P_8021Q)
			if st&unix.TP_STATUS_VLAN_TPID_VALID != 0 && h.Vlan_tpid != 0 {
				tpid = h.Vlan_tpid
			}
			f := s.scratch[:snap+4]
			copy(f, slot[off:off+12])
			binary.BigEndian.PutUint16(f[12:], tpid)
			binary.BigEndian.PutUint16(f[14:], h.Vlan_tci)
			copy(f[16:], slot[off+12:off+snap])
			s.st.vlan.Add(1)
			s.st.rx.Add(1)
			fn(f)
		default:
			s.st.rx.Add(1)
			fn(slot[off : off+snap])
		}
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		s.rxHead++
		if s.rxHead == s.rxN {
			s.rxHead = 0
		}
		n++
	}
	return n
}

// poll waits for events on the socket, for Close, or for timeout (negative: no limit).
func (s *Socket) poll(events int16, timeout time.Duration) error {
	fds := [2]unix.PollFd{{Fd: int32(s.fd), Events: events}, {Fd: int32(s.wake), Events: unix.POLLIN}}
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	s.st.polls.Add(1)
	_, err := unix.Ppoll(fds[:], ts, nil)
	if s.closed.Load() {
		return ErrClosed
	}
	if err != nil && !errors.Is(err, unix.EINTR) {
		return err
	}
	return nil
}
