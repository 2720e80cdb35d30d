//go:build !purego

package ps

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 {
		assignValues, addValues, encodeSums = assignValuesAVX2, addValuesAVX2, encodeSumsAVX2
	}
}

//go:noescape
func assignValuesAVX2(s *sums, v *packed)

//go:noescape
func addValuesAVX2(s *sums, v *packed)

//go:noescape
func encodeSumsAVX2(out *packed, s *sums) bool
