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
