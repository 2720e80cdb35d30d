package transport

import (
	"sync"
	"sync/atomic"
	"time"
)

// Mem is an in-memory transport endpoint. Frames sent go to the send function given to NewMem;
// frames for this endpoint are handed in with Deliver and queued up to a fixed depth, past which
// they are dropped (like a NIC ring) and counted.
type Mem struct {
	send    func([]byte) error
	in      chan []byte
	done    chan struct{}
	once    sync.Once
	dropped atomic.Uint64
}

// NewMem returns an endpoint whose Send calls send (with a copy of the frame it may keep) and whose
// receive queue holds depth frames.
func NewMem(send func([]byte) error, depth int) *Mem {
	return &Mem{send: send, in: make(chan []byte, depth), done: make(chan struct{})}
}

// Pipe returns two endpoints connected back to back, each with a queue of depth frames.
func Pipe(depth int) (a, b *Mem) {
	a = NewMem(nil, depth)
	b = NewMem(nil, depth)
	a.send = func(f []byte) error { b.Deliver(f); return nil }
	b.send = func(f []byte) error { a.Deliver(f); return nil }
	return a, b
}

// Send implements Transport.
func (m *Mem) Send(frame []byte) error {
	select {
	case <-m.done:
		return ErrClosed
	default:
	}
	return m.send(append([]byte(nil), frame...))
}

// Deliver queues frame (kept, not copied) for Recv. It reports false, and counts a drop, when the
// queue is full or the endpoint is closed.
func (m *Mem) Deliver(frame []byte) bool {
	select {
	case <-m.done:
		m.dropped.Add(1)
		return false
	default:
	}
	select {
	case m.in <- frame:
		return true
	default:
		m.dropped.Add(1)
		return false
	}
}

// Len is the number of frames queued for Recv (an egress queue depth, for ECN in tests).
func (m *Mem) Len() int { return len(m.in) }

// Dropped is the number of frames Deliver refused.
func (m *Mem) Dropped() uint64 { return m.dropped.Load() }

// Recv implements Transport.
func (m *Mem) Recv(buf []byte, deadline time.Time) (int, error) {
	select {
	case f := <-m.in:
		return copy(buf, f), nil
	case <-m.done:
		return 0, ErrClosed
	default:
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return 0, ErrTimeout
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case f := <-m.in:
		return copy(buf, f), nil
	case <-m.done:
		return 0, ErrClosed
	case <-timeout:
		return 0, ErrTimeout
	}
}

// Close implements Transport.
func (m *Mem) Close() error {
	m.once.Do(func() { close(m.done) })
	return nil
}
