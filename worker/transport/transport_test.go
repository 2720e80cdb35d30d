package transport

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
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

// TestPacket sends a frame across a veth pair (root only).
func TestPacket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: AF_PACKET and veth creation need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: iproute2 (ip) not on PATH")
	}
	run := func(args ...string) error { return exec.Command("ip", args...).Run() }
	// Named after this process, so concurrent runs on one machine do not delete each other's pair.
	l0, l1 := fmt.Sprintf("agtp0-%d", os.Getpid()%100000), fmt.Sprintf("agtp1-%d", os.Getpid()%100000)
	_ = run("link", "del", l0)
	if err := run("link", "add", l0, "type", "veth", "peer", "name", l1); err != nil {
		t.Skipf("SKIP: cannot create a veth pair: %v", err)
	}
	t.Cleanup(func() { _ = run("link", "del", l0) })
	for _, l := range []string{l0, l1} {
		if err := run("link", "set", l, "up"); err != nil {
			t.Fatal(err)
		}
	}
	a, err := OpenPacket(l0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPacket(l1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
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
	for time.Now().Before(giveUp) {
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
		if n == 60 && buf[59] == 0xab && bytes.Equal(buf[6:12], a.MAC()) {
			return
		}
	}
	t.Fatal("no frame crossed the veth pair in 10s")
}
