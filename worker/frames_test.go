package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// Every frame a worker sends is, byte for byte, the frame wire.Frame.Marshal writes for its
// fields: the headers built once per job and stamped per frame carry the right IPv4 ID (one more
// each frame) and checksum, the chunk's seq, slot and values, RESEND on a retry, and nothing left
// of the frame before it. The window is a power of two (slots and the window's ring by masks) or
// not (slots by division, a ring longer than the window), with a slot base.
func TestSentFramesAreWholeFrames(t *testing.T) {
	for _, c := range []struct{ base, window int }{{0, 16}, {3, 12}} {
		t.Run(fmt.Sprintf("slots %d+%d", c.base, c.window), func(t *testing.T) { testSentFrames(t, uint16(c.base), c.window) })
	}
}

func testSentFrames(t *testing.T, slotBase uint16, window int) {
	var mu sync.Mutex
	var sent [][]byte
	dropped := false
	ends := hubWith(t, 1, links{
		sent: func(_ int, b []byte) { mu.Lock(); sent = append(sent, b); mu.Unlock() },
		toPS: func(_ int, f *wire.Frame) bool {
			mu.Lock()
			defer mu.Unlock()
			if f.INA.Seq == 5 && !dropped {
				dropped = true // lost once: the worker resends it
				return false
			}
			return true
		}})
	cfg := config(0, 1)
	cfg.Member, cfg.Priority, cfg.SlotBase, cfg.Window = 3, 5, slotBase, window
	w, err := worker.New(cfg, ends[0])
	if err != nil {
		t.Fatal(err)
	}
	n := w.ChunkValues()
	data := make([]int32, 20*n-7) // the last chunk's tail is zero
	for i := range data {
		data[i] = int32(i) - 500
	}
	if err := w.AllReduceInt32(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) < 21 {
		t.Fatalf("%d frames sent for 20 chunks and a loss", len(sent))
	}
	resent := false
	var f wire.Frame
	for i, b := range sent {
		if err := f.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if want := f.Marshal(); !bytes.Equal(b, want) {
			t.Fatalf("frame %d (seq %d) is not its fields' frame:\n got %x\nwant %x", i, f.INA.Seq, b, want)
		}
		if f.ID != uint16(i+1) {
			t.Errorf("frame %d: IPv4 ID %d, want %d", i, f.ID, i+1)
		}
		h := f.INA
		if h.Member != 3 || h.Priority != 5 || h.Job != 1 || h.Type != wire.TypeData || h.Bitmap != 1 || h.Slot != slotBase+uint16(h.Seq%uint32(window)) {
			t.Errorf("frame %d: header %+v", i, h)
		}
		if h.Seq == 5 && h.Flags&wire.FlagResend != 0 {
			resent = true
		} else if h.Flags != 0 {
			t.Errorf("frame %d (seq %d): flags %v", i, h.Seq, h.Flags)
		}
		if !wire.IntegrityOKValues(&h.Values) {
			t.Errorf("frame %d (seq %d): integrity lane wrong", i, h.Seq)
		}
		for j := range n {
			want := int32(0)
			if k := int(h.Seq)*n + j; k < len(data) {
				want = int32(k) - 500
			}
			if h.Values[j] != want {
				t.Fatalf("frame %d (seq %d): value %d is %d, want %d", i, h.Seq, j, h.Values[j], want)
			}
		}
	}
	if !resent {
		t.Error("seq 5 was lost and never resent with RESEND")
	}
}
