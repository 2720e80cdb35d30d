package netpack

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU runs fn on one locked OS thread and returns the CPU time that thread spent, which
// unlike wall time does not grow when other processes compete for the cores.
func threadCPU(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &a) != nil {
		fn()
		return 0
	}
	fn()
	if unix.Getrusage(unix.RUSAGE_THREAD, &b) != nil {
		return 0
	}
	return time.Duration(b.Utime.Nano()+b.Stime.Nano()-a.Utime.Nano()-a.Stime.Nano()) * time.Nanosecond
}
