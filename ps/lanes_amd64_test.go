//go:build !purego

package ps

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 {
		laneKernels = append(laneKernels, kernels{"avx2", assignValuesAVX2, addValuesAVX2, encodeSumsAVX2})
	}
}
