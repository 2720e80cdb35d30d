package afring

import (
	"os/exec"
	"testing"
	"time"
)

// TestRingFilledWhileDown: ina-cluster chaos found a reference switch port that never sent again
// after its link was down for 30 s. Sends failed (ENETDOWN) while the frames queued for them
// filled the TX ring; the failed sends were forgotten, so Queue waited for a free slot forever.
// Now a Queue on a down link fails at once, and once the link is up frames flow again.
func TestRingFilledWhileDown(t *testing.T) {
	an, bn := vethPair(t, "l")
	a, b := open(t, an, Config{TXFrames: 8}), open(t, bn, Config{})
	frames := [][]byte{testFrame(60, 1)}
	if got := exchange(t, a, b, frames); len(got) != 1 {
		t.Fatalf("before the link went down: %d frames", len(got))
	}
	link := func(state string) {
		if out, err := exec.Command("ip", "link", "set", an, state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v: %s", an, state, err, out)
		}
	}
	link("down")
	done := make(chan int)
	go func() {
		failed := 0
		for range 40 { // five rings' worth
			if err := a.Queue(frames[0]); err != nil {
				failed++
			}
			if err := a.Flush(); err != nil {
				failed++
			}
		}
		done <- failed
	}()
	select {
	case failed := <-done:
		if failed == 0 {
			t.Error("no send failed on a link that is down")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Queue hung on a link that is down, its ring full of frames it could not send")
	}
	link("up")
	// The first send may still report the error the link's going down left on the socket.
	_ = a.Flush()
	// The frames left in the ring go out first.
	if got := exchange(t, a, b, frames); len(got) < 1 {
		t.Fatalf("after the link came back: %d frames", len(got))
	}
}
