package bench

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary play the bare path's processes, as ina-bench does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "path-") {
		if err := pathRole(os.Args[1], os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Results only come back once the switch has the packet of every worker: a path that moves
// chunks at all aggregates correctly, and its veths are gone afterwards.
func TestPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: veth pairs and AF_PACKET sockets")
	}
	prefix := fmt.Sprintf("it%d", os.Getpid()%10000)
	r, err := path(pathOpts{workers: 3, window: 16, warmup: 100 * time.Millisecond, measure: 300 * time.Millisecond, prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if r.goodput <= 0 || r.cpuPerChunk <= 0 {
		t.Errorf("goodput %v Mbit/s, %v ns of CPU per chunk: no chunk completed", r.goodput, r.cpuPerChunk)
	}
	for _, i := range []int{0, 3} {
		if _, err := os.Stat(fmt.Sprintf("/sys/class/net/%ss%d", prefix, i)); err == nil {
			t.Errorf("veth %ss%d left behind", prefix, i)
		}
	}
}

func TestPathRoleArguments(t *testing.T) {
	for _, args := range [][]string{{"path-switch", "a"}, {"path-worker", "h", "x", "64", "1s", "1s"}, {"path-ps"}, {"path-other", "x"}} {
		if err := pathRole(args[0], args[1:]); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// A chunk goes on to the PS once, with the last worker's packet; a repeat of a worker's packet
// before then does not complete it; a repeat after it does (a retransmission); a newer seq takes
// the entry over.
func TestArrive(t *testing.T) {
	var e atomic.Uint64
	const full = 0b111
	steps := []struct {
		seq  uint32
		bit  uint64
		want bool
	}{{7, 1, false}, {7, 1, false}, {7, 2, false}, {7, 4, true}, {7, 2, true}, {4103, 1, false}, {4103, 2, false}, {4103, 4, true}}
	for i, s := range steps {
		if got := arrive(&e, s.seq, s.bit, full); got != s.want {
			t.Errorf("step %d (seq %d bit %d): %v, want %v", i, s.seq, s.bit, got, s.want)
		}
	}
}
