package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrGone: the process has exited (a zombie has released everything but its PID).
var ErrGone = errors.New("process gone")

// StartTicks is when process pid started, in clock ticks since boot (field 22 of /proc/PID/stat):
// a later process that reuses the PID has another.
func StartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return 0, ErrGone
	}
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields resume after the last ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, ErrGone
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// StartTime is the wall-clock time of a start in ticks since boot (10 ms resolution); zero if
// unknown. The ticks are placed against /proc/uptime read now: /proc/stat's btime is whole
// seconds, which would put every start up to a second early.
func StartTime(ticks uint64) time.Time {
	b, err := os.ReadFile("/proc/uptime")
	now := time.Now()
	if err != nil || ticks == 0 {
		return time.Time{}
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Time{}
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	ago := time.Duration(up*float64(time.Second)) - time.Duration(ticks)*10*time.Millisecond
	return now.Add(-ago)
}
