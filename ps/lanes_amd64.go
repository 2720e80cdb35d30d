//go:build !purego

package ps

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX2 {
		narrowLanes = true
		assignNarrow, addNarrow, encodeNarrow = assignNarrowAVX2, addNarrowAVX2, encodeNarrowAVX2
		addValues, encodeSums = addValuesAVX2, encodeSumsAVX2
	}
}

//go:noescape
func assignNarrowAVX2(s *narrow, v *packed)

//go:noescape
func addNarrowAVX2(s *narrow, v *packed) bool

//go:noescape
func encodeNarrowAVX2(out *packed, s *narrow) bool

//go:noescape
func addValuesAVX2(s *sums, v *packed)

//go:noescape
func encodeSumsAVX2(out *packed, s *sums) bool
