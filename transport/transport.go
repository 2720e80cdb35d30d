// Package transport moves Ethernet frames for the INA agents over AF_PACKET or in memory.
package transport

import (
	"errors"
	"time"
)

// ErrTimeout is returned by Recv when the deadline passes before a frame arrives.
var ErrTimeout = errors.New("transport: receive deadline exceeded")

// ErrClosed is returned by Send and Recv after Close.
var ErrClosed = errors.New("transport: closed")

// Transport sends and receives Ethernet frames. Send may be called concurrently with Recv; each of
// Send and Recv is used by one goroutine at a time.
type Transport interface {
	// Send transmits one frame. The transport does not keep frame after Send returns.
	Send(frame []byte) error
	// Recv copies the next frame into buf and returns its length. It returns ErrTimeout when deadline
	// passes first (a zero deadline waits forever) and ErrClosed after Close.
	Recv(buf []byte, deadline time.Time) (int, error)
	// Close releases the transport and unblocks a pending Recv.
	Close() error
}

// Batcher is implemented by transports that can hold frames and send them together, one system
// call for many frames. The agents use it when it is there.
type Batcher interface {
	// Queue transmits frame no later than the next Flush. The transport does not keep frame.
	Queue(frame []byte) error
	// Flush transmits every queued frame.
	Flush() error
}

// BatchReceiver is implemented by transports that hand received frames over in place.
type BatchReceiver interface {
	// RecvBatch calls fn for each frame waiting, at most max of them (max <= 0: no limit), waiting
	// until deadline for the first one (a zero deadline waits forever). It returns how many frames
	// fn saw, ErrTimeout when none came in time, and ErrClosed after Close. frame is valid only
	// while fn runs.
	RecvBatch(deadline time.Time, max int, fn func(frame []byte)) (int, error)
}
