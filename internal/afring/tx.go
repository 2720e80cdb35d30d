package afring

import (
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Queue copies frame into the next free TX slot. Nothing is sent until Flush, except when the
// ring is full: Queue then flushes and waits for a free slot.
func (s *Socket) Queue(frame []byte) error {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if len(frame) > s.frameSize-txOff {
		s.st.txErrors.Add(1)
		return ErrTooLarge
	}
	h := s.hdr(s.tx, s.txHead)
	for status(h) != unix.TP_STATUS_AVAILABLE {
		if st := status(h); st&unix.TP_STATUS_WRONG_FORMAT != 0 {
			// The kernel refused the frame that used this slot (PACKET_LOSS only skips it).
			s.st.txErrors.Add(1)
			atomic.StoreUint32(&h.Status, unix.TP_STATUS_AVAILABLE)
			break
		}
		s.st.txFull.Add(1)
		if err := s.flush(); err != nil {
			return err
		}
		if status(h) == unix.TP_STATUS_AVAILABLE {
			break
		}
		if err := s.wait(unix.POLLOUT, 10*time.Millisecond); err != nil {
			return err
		}
	}
	base := s.txHead * s.frameSize
	copy(s.tx[base+txOff:], frame)
	h.Len = uint32(len(frame))
	atomic.StoreUint32(&h.Status, unix.TP_STATUS_SEND_REQUEST)
	s.txHead++
	if s.txHead == s.txN {
		s.txHead = 0
	}
	s.txPending++
	s.st.tx.Add(1)
	return nil
}

// Flush asks the kernel to send every queued frame, in one system call. It does not wait for the
// frames to leave.
func (s *Socket) Flush() error {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return s.flush()
}

// Frames the kernel did not take stay queued, and pending, until a send succeeds: a ring filled
// while the interface was down (ENETDOWN) is sent once it is up, where forgetting them left every
// slot waiting for a send that never came and Queue waiting for a slot forever.
func (s *Socket) flush() error {
	if s.txPending == 0 {
		return nil
	}
	s.st.flushes.Add(1)
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch {
		case e == 0:
			s.txPending = 0
			return nil
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN || e == unix.ENOBUFS:
			return nil // the frames stay queued; the next Flush or a full ring retries
		}
		s.st.txErrors.Add(1)
		return errors.New("afring: send: " + e.Error())
	}
}

// Send queues frame and flushes.
func (s *Socket) Send(frame []byte) error {
	if err := s.Queue(frame); err != nil {
		return err
	}
	return s.Flush()
}
