//go:build !purego

package wire

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 {
		weighted, weightedValues = weightedAVX2, weightedValuesAVX2
	}
}

// integrityWeightsAVX2 is integrityWeights in the order the kernels read them: for each 8 values,
// the weights of the even ones, then of the odd ones (integrity_amd64.s reads it in place).
var integrityWeightsAVX2 = func() (w [NumValues]int64) {
	for i, x := range integrityWeights {
		blk, j := i/8, i%8
		w[8*blk+j%2*4+j/2] = x
	}
	return w
}()

//go:noescape
func weightedAVX2(b *[4 * NumValues]byte) int64

//go:noescape
func weightedValuesAVX2(v *[NumValues]int32) int64
