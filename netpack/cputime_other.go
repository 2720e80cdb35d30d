//go:build !linux

package netpack

import "time"

// threadCPU runs fn; thread CPU time is only measured on Linux.
func threadCPU(fn func()) time.Duration {
	fn()
	return 0
}
