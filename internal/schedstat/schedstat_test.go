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
	end := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(end); x++ {
		_ = x * x
	}
	b, err := Read(0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Run-a.Run < 10*time.Millisecond {
		t.Errorf("30 ms of spinning added %v of CPU time", b.Run-a.Run)
	}
}
