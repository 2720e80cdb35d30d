// Package schedstat reads how long a process ran on a CPU and how long it waited, runnable, for
// one (Linux /proc/PID/task/*/schedstat, summed over the process's threads).
package schedstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Times is a process's CPU time and run-queue wait, summed over its live threads.
type Times struct {
	Run, Wait time.Duration
}

// Read returns the times of process pid (0: this process). It fails where the kernel keeps no
// scheduler statistics (non-Linux, or built without CONFIG_SCHED_INFO).
func Read(pid int) (Times, error) {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return Times{}, err
	}
	var t Times
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		run, wait, err := parse(string(b))
		if err != nil {
			return Times{}, fmt.Errorf("%s/%s/schedstat: %w", dir, task.Name(), err)
		}
		t.Run += run
		t.Wait += wait
	}
	return t, nil
}

// parse reads "run_ns wait_ns timeslices".
func parse(s string) (run, wait time.Duration, err error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("want at least two fields, got %q", s)
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || r < 0 || w < 0 {
		return 0, 0, fmt.Errorf("want two counts of nanoseconds, got %q", s)
	}
	return time.Duration(r), time.Duration(w), nil
}
