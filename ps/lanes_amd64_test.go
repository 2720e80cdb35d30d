//go:build !purego

package ps

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 {
		laneKernels = append(laneKernels, kernels{"avx2", true, assignNarrowAVX2, addNarrowAVX2, encodeNarrowAVX2,
			assignValuesGeneric, addValuesAVX2, encodeSumsAVX2})
	}
}
