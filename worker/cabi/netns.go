//go:build cgo

package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// inNetns runs f on an OS thread that has entered the network namespace ns (a name from ip netns
// add, or a path such as /proc/PID/ns/net), then returns that thread to the process's namespace.
// A socket keeps the namespace it was opened in, so a worker's AF_PACKET socket can sit on an
// emulated host's interface while the process, and with it torch.distributed's store and gloo
// connections, stays on the machine's own network.
func inNetns(ns string, f func() error) error {
	if ns == "" {
		return f()
	}
	path := ns
	if !strings.Contains(ns, "/") {
		path = "/run/netns/" + ns
	}
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: netns %q: %v", errConfig, ns, err)
	}
	defer target.Close()
	done := make(chan error, 1)
	// A goroutine of its own: if the thread cannot return to its namespace, it stays locked and
	// the runtime ends it with the goroutine instead of reusing it (a cgo caller's thread could
	// not be ended).
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			done <- fmt.Errorf("netns %q: %v", ns, err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("%w: netns %q: setns: %v (needs CAP_SYS_ADMIN)", errConfig, ns, err)
			return
		}
		err = f()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}
