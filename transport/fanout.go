package transport

import (
	"errors"
	"sync"
	"time"
)

// Fanout joins several transports into one: Recv returns the next frame from any of them and Send
// goes out on every one. A parameter server on a machine that also hosts one of its job's workers
// uses it: the local worker reaches the PS over a private link while the others come through the
// switch, and every result must reach both.
type Fanout struct {
	ts   []Transport
	in   chan []byte
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	errs chan error
}

// NewFanout starts one receiver per transport; the Fanout owns them (Close closes them all).
func NewFanout(ts ...Transport) *Fanout {
	f := &Fanout{ts: ts, in: make(chan []byte, 1024), done: make(chan struct{}), errs: make(chan error, len(ts))}
	for _, t := range ts {
		f.wg.Add(1)
		go f.receive(t)
	}
	return f
}

func (f *Fanout) receive(t Transport) {
	defer f.wg.Done()
	buf := make([]byte, 16384)
	for {
		n, err := t.Recv(buf, time.Now().Add(100*time.Millisecond))
		select {
		case <-f.done:
			return
		default:
		}
		if errors.Is(err, ErrTimeout) {
			continue
		}
		if err != nil {
			f.errs <- err
			return
		}
		select {
		case f.in <- append([]byte(nil), buf[:n]...):
		case <-f.done:
			return
		}
	}
}

// Send implements Transport: the frame goes out on every transport; the first error is returned
// after trying them all.
func (f *Fanout) Send(frame []byte) error {
	var first error
	for _, t := range f.ts {
		if err := t.Send(frame); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Recv implements Transport. A receive error of any member ends the Fanout's Recv with that error.
func (f *Fanout) Recv(buf []byte, deadline time.Time) (int, error) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case b := <-f.in:
		return copy(buf, b), nil
	case err := <-f.errs:
		return 0, err
	case <-f.done:
		return 0, ErrClosed
	case <-timeout:
		return 0, ErrTimeout
	}
}

// Close implements Transport, closing every member.
func (f *Fanout) Close() error {
	var first error
	f.once.Do(func() {
		close(f.done)
		for _, t := range f.ts {
			if err := t.Close(); err != nil && first == nil {
				first = err
			}
		}
		f.wg.Wait()
	})
	return first
}
