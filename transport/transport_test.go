package transport

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/inapack/inapack/internal/vethtest"
)

func TestMem(t *testing.T) {
	a, b := Pipe(2)
	frame := []byte{1, 2, 3}
	if err := a.Send(frame); err != nil {
		t.Fatal(err)
	}
	frame[0] = 9 // Send copied it
	buf := make([]byte, 16)
	n, err := b.Recv(buf, time.Now().Add(time.Second))
	if err != nil || !bytes.Equal(buf[:n], []byte{1, 2, 3}) {
		t.Fatalf("Recv = %v, %v", buf[:n], err)
	}
	if _, err := b.Recv(buf, time.Now().Add(10*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Errorf("empty Recv: %v, want ErrTimeout", err)
	}
	for range 3 {
		_ = a.Send(frame)
	}
	if b.Dropped() != 1 || b.Len() != 2 {
		t.Errorf("queue of 2 after 3 frames: dropped %d, len %d", b.Dropped(), b.Len())
	}
	go func() { time.Sleep(10 * time.Millisecond); b.Close() }()
	for {
		if _, err := b.Recv(buf, time.Time{}); errors.Is(err, ErrClosed) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(frame); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
}

// TestPacket sends a frame across a veth pair, the receiver waiting in the network poller and in
// ppoll (Blocking), and a Close ends a receive that waits without a deadline (root only).
func TestPacket(t *testing.T) {
	for _, blocking := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "blocking"}[blocking], func(t *testing.T) {
			testPacket(t, PacketConfig{Blocking: blocking})
		})
	}
}

func testPacket(t *testing.T, cfg PacketConfig) {
	l0, l1 := vethtest.Pair(t, "agtp", 0)
	a, err := OpenPacket(l0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPacketConfig(l1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A socket that blocked when not asked to (as OpenPacketConfig once made every one) works
	// alike here, but holds a thread, and its core, in ppoll.
	if b.s.Blocking() != cfg.Blocking || a.s.Blocking() {
		t.Errorf("waits in ppoll: %v (asked %v), OpenPacket's %v (want the poller)", b.s.Blocking(), cfg.Blocking, a.s.Blocking())
	}
	frame := make([]byte, 60)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:], a.MAC())
	frame[12], frame[13] = 0x08, 0x00 // IPv4 ethertype, garbage body: only the bytes matter here
	frame[14] = 0x45
	frame[59] = 0xab
	// A veth that was just set up drops frames until the kernel's link watcher has attached its
	// queueing discipline (asynchronous, up to a second), so the frame is sent again until one
	// arrives instead of once.
	buf := make([]byte, 2048)
	giveUp := time.Now().Add(10 * time.Second)
	for crossed := false; !crossed; {
		if time.Now().After(giveUp) {
			t.Fatal("no frame crossed the veth pair in 10s")
		}
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		n, err := b.Recv(buf, time.Now().Add(50*time.Millisecond))
		if errors.Is(err, ErrTimeout) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		crossed = n == 60 && buf[59] == 0xab && bytes.Equal(buf[6:12], a.MAC())
	}
	done := make(chan error)
	go func() {
		for {
			if _, err := b.Recv(buf, time.Time{}); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Recv after Close: %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end a Recv waiting without a deadline")
	}
}

// TestWaitBlocking: receivers may block while one of the cores Go may use is left over.
func TestWaitBlocking(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if !WaitBlocking(1) || WaitBlocking(2) || WaitBlocking(4) {
		t.Errorf("GOMAXPROCS 2: WaitBlocking(1, 2, 4) = %v, %v, %v; want true, false, false", WaitBlocking(1), WaitBlocking(2), WaitBlocking(4))
	}
	runtime.GOMAXPROCS(1)
	if WaitBlocking(1) {
		t.Error("GOMAXPROCS 1: one blocking receiver allowed, and it would hold the only core")
	}
}
