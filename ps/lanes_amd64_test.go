//go:build !purego

package ps

func init() {
	if haveAVX2 {
		laneKernels = append(laneKernels, kernels{"avx2", assignValuesAVX2, addValuesAVX2, encodeSumsAVX2})
	}
}
