//go:build !purego

package ps

import "golang.org/x/sys/cpu"

var haveAVX2 = cpu.X86.HasAVX2

func assignValues(s *sums, v *packed) {
	if haveAVX2 {
		assignValuesAVX2(s, v)
	} else {
		assignValuesGeneric(s, v)
	}
}

func addValues(s *sums, v *packed) {
	if haveAVX2 {
		addValuesAVX2(s, v)
	} else {
		addValuesGeneric(s, v)
	}
}

func encodeSums(out *packed, s *sums) bool {
	if haveAVX2 {
		return encodeSumsAVX2(out, s)
	}
	return encodeSumsGeneric(out, s)
}

//go:noescape
func assignValuesAVX2(s *sums, v *packed)

//go:noescape
func addValuesAVX2(s *sums, v *packed)

//go:noescape
func encodeSumsAVX2(out *packed, s *sums) bool
