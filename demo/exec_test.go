package demo

import (
	"slices"
	"testing"
	"time"
)

func TestExecFlag(t *testing.T) {
	e := execFlags{}
	for _, bad := range []string{"python3 x.py", "x=python3", "1=", "1=  "} {
		if e.Set(bad) == nil {
			t.Errorf("-exec %q accepted", bad)
		}
	}
	if err := e.Set("1=python3 -m inapack.demo.train --x=1"); err != nil || e[1] != "python3 -m inapack.demo.train --x=1" {
		t.Fatalf("-exec: %v %q", err, e[1])
	}
	d := &demo{exec: e, bin: "bin", ps: host{mac: "02:00:00:00:00:01"}}
	_ = d.jobs.Set("1:4:3")
	_ = d.jobs.Set("2:2:5")
	j := d.jobs[0]
	j.slotBase, j.window = 4, 12
	argv := d.workerArgv(j, 2, host{name: "p-j1w2", ip: "10.0.1.3"}, 30*time.Second)
	for _, want := range []string{"RANK=2", "WORLD_SIZE=4", "INAPACK_JOB=1", "INAPACK_IFACE=eth0", "INAPACK_IP=10.0.1.3",
		"INAPACK_PS_IP=" + psIP, "INAPACK_PS_MAC=02:00:00:00:00:01", "INAPACK_PRIORITY=3", "INAPACK_SLOT_BASE=4",
		"INAPACK_WINDOW=12", "INAPACK_PROGRESS_TIMEOUT=30"} {
		if !slices.Contains(argv, want) {
			t.Errorf("argv %q lacks %s", argv, want)
		}
	}
	if argv[len(argv)-1] != e[1] || argv[3] != "p-j1w2" {
		t.Errorf("argv %q", argv)
	}
	if argv := d.workerArgv(d.jobs[1], 0, host{name: "p-j2w0"}, time.Second); argv[4] != "bin/ina-worker" {
		t.Errorf("job 2 (no -exec) runs %q", argv)
	}
	if argv := d.workerArgv(d.jobs[1], 0, host{name: "p-j2w0"}, time.Second); slices.Contains(argv, "-trace") {
		t.Errorf("without -trace: %q", argv)
	}
	d.trace = true
	if argv := d.workerArgv(d.jobs[1], 0, host{name: "p-j2w0"}, time.Second); !slices.Contains(argv, "-trace") {
		t.Errorf("-trace not passed on to ina-worker: %q", argv)
	}
	if d.execJob() != 0 {
		t.Error("-exec 1 with -job 1 reported unmatched")
	}
	_ = e.Set("3=true")
	if d.execJob() != 3 {
		t.Error("-exec 3 without -job 3 not reported")
	}
}
