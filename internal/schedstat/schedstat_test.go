package schedstat

import (
	"runtime"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	run, wait, err := parse("1500000000 250000 42\n")
	if err != nil || run != 1500*time.Millisecond || wait != 250*time.Microsecond {
		t.Fatalf("parse: %v %v %v", run, wait, err)
	}
	for _, bad := range []string{"", "12", "x 1 2", "1 -2 3"} {
		if _, _, err := parse(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}

func TestReadSelfGrowsWithWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("schedstat: Linux only")
	}
	a, err := Read(0)
	if err != nil {
		t.Skipf("schedstat: this kernel keeps none: %v", err)
	}
	// Spin until the counter shows 10 ms more, or 10 s pass: on a loaded host 30 ms of wall time
	// can bring a few ms of CPU, but 10 s of spinning always brings more than 10 ms.
	deadline := time.Now().Add(10 * time.Second)
	var b Times
	for x := 0; ; x++ {
		_ = x * x
		if x%(1<<16) != 0 {
			continue
		}
		if b, err = Read(0); err != nil {
			t.Fatal(err)
		}
		if b.Run-a.Run >= 10*time.Millisecond || time.Now().After(deadline) {
			break
		}
	}
	if b.Run-a.Run < 10*time.Millisecond {
		t.Errorf("10 s of spinning added %v of CPU time", b.Run-a.Run)
	}
}
