package afring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inapack/inapack/internal/vethtest"
)

// vethPair is a veth pair of this test (see vethtest.Pair), MTU 9000.
func vethPair(t testing.TB, tag string) (a, b string) {
	t.Helper()
	return vethtest.Pair(t, "afr"+tag, 9000)
}

func open(t testing.TB, name string, cfg Config) *Socket {
	t.Helper()
	cfg.Promiscuous = true
	s, err := Open(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testFrame is an IPv4 frame of n bytes whose payload bytes count up from seed.
func testFrame(n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45})
	for i := 15; i < n; i++ {
		f[i] = seed + byte(i)
	}
	return f
}

// exchange sends frames from a to b until want of them arrive (a fresh veth drops frames until
// its qdisc is attached), and returns what b received.
func exchange(t *testing.T, a, b *Socket, frames [][]byte) [][]byte {
	return exchangeN(t, a, b, frames, len(frames))
}

func exchangeN(t *testing.T, a, b *Socket, frames [][]byte, want int) [][]byte {
	t.Helper()
	var got [][]byte
	for try := 0; try < 200 && len(got) < want; try++ {
		got = got[:0]
		for _, f := range frames {
			if err := a.Queue(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(50 * time.Millisecond)
		for len(got) < want && time.Now().Before(deadline) {
			if _, err := b.Receive(time.Until(deadline), 0, func(f []byte) { got = append(got, bytes.Clone(f)) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

func TestRoundTrip(t *testing.T) {
	an, bn := vethPair(t, "r")
	a, b := open(t, an, Config{}), open(t, bn, Config{})
	frames := [][]byte{testFrame(60, 1), testFrame(314, 2), testFrame(1514, 3), testFrame(a.MaxFrame(), 4)}
	got := exchange(t, a, b, frames)
	if len(got) != len(frames) {
		t.Fatalf("received %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Errorf("frame %d (%d bytes) came back as %d bytes, different", i, len(frames[i]), len(got[i]))
		}
	}
	if err := a.Queue(make([]byte, a.MaxFrame()+64)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a frame beyond the slot: %v, want ErrTooLarge", err)
	}
	// Beyond the ring slot, a frame is truncated by the kernel and dropped (counted) here.
	big := testFrame(3000, 5)
	if got := exchangeN(t, open(t, an, Config{FrameSize: 4096}), b, [][]byte{big, frames[0]}, 1); len(got) != 1 || len(got[0]) != 60 {
		t.Errorf("after a frame larger than the slot: %d frames", len(got))
	}
	if st := b.Stats(); st.Truncated == 0 || st.TX != 0 || st.RX < 5 {
		t.Errorf("stats %+v: want truncated > 0, rx >= 5, tx 0", st)
	}
	if st := a.Stats(); st.TX < 4 || st.TXErrors != 1 || st.Flushes == 0 {
		t.Errorf("sender stats %+v", st)
	}
}

// The kernel strips 802.1Q/802.1ad tags before AF_PACKET sees the frame; Receive puts them back,
// the priority-only tag (VID 0) included.
func TestVLANRestored(t *testing.T) {
	an, bn := vethPair(t, "v")
	a, b := open(t, an, Config{}), open(t, bn, Config{})
	tagged := func(tpid, tci uint16) []byte {
		f := testFrame(318, 7)
		copy(f[16:], f[12:314])
		binary.BigEndian.PutUint16(f[12:], tpid)
		binary.BigEndian.PutUint16(f[14:], tci)
		binary.BigEndian.PutUint16(f[16:], 0x0800)
		return f
	}
	frames := [][]byte{tagged(unix.ETH_P_8021Q, 5), tagged(unix.ETH_P_8021Q, 0), tagged(unix.ETH_P_8021Q, 0xe00a), tagged(unix.ETH_P_8021AD, 7)}
	got := exchange(t, a, b, frames)
	if len(got) != len(frames) {
		t.Fatalf("received %d frames, want %d", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Errorf("tagged frame %d: got %x, want %x", i, got[i][:18], frames[i][:18])
		}
	}
	if st := b.Stats(); st.VLAN != uint64(len(frames)) {
		t.Errorf("VLAN restored %d, want %d", st.VLAN, len(frames))
	}
}

// A reader that never drains its ring makes the kernel drop, and Stats reports it.
func TestKernelDropsCounted(t *testing.T) {
	an, bn := vethPair(t, "d")
	a, b := open(t, an, Config{TXFrames: 64}), open(t, bn, Config{RXFrames: 8, FrameSize: 512})
	exchange(t, a, b, [][]byte{testFrame(60, 1)}) // wait for the link
	f := testFrame(100, 1)
	for range 200 {
		if err := a.Queue(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if st := b.Stats(); st.KernelDrops == 0 {
		t.Errorf("stats %+v: 200 frames into 8 slots dropped none", st)
	}
}

func TestCloseUnblocksReceive(t *testing.T) {
	an, _ := vethPair(t, "c")
	s, err := Open(an, Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := s.Receive(-1, 0, func([]byte) {})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Receive after Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end a blocked Receive")
	}
	if err := s.Queue(testFrame(60, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Queue after Close: %v", err)
	}
}
