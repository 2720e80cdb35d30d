package transport

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestFanout(t *testing.T) {
	a, aPeer := Pipe(8)
	b, bPeer := Pipe(8)
	f := NewFanout(a, b)
	defer f.Close()
	buf := make([]byte, 64)
	// Frames from either member arrive.
	for i, peer := range []*Mem{aPeer, bPeer} {
		if err := peer.Send([]byte{byte(i + 1)}); err != nil {
			t.Fatal(err)
		}
		n, err := f.Recv(buf, time.Now().Add(2*time.Second))
		if err != nil || !bytes.Equal(buf[:n], []byte{byte(i + 1)}) {
			t.Fatalf("frame from member %d: %v, %v", i, buf[:n], err)
		}
	}
	// A send reaches every member's peer.
	if err := f.Send([]byte{7, 7}); err != nil {
		t.Fatal(err)
	}
	for i, peer := range []*Mem{aPeer, bPeer} {
		n, err := peer.Recv(buf, time.Now().Add(time.Second))
		if err != nil || !bytes.Equal(buf[:n], []byte{7, 7}) {
			t.Fatalf("member %d's peer got %v, %v", i, buf[:n], err)
		}
	}
	if _, err := f.Recv(buf, time.Now().Add(20*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Errorf("idle Recv: %v, want ErrTimeout", err)
	}
	f.Close()
	if _, err := f.Recv(buf, time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Recv after Close: %v, want ErrClosed", err)
	}
	if err := a.Send([]byte{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("member after Close: %v, want ErrClosed", err)
	}
}
