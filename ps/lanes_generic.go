//go:build !amd64 || purego

package ps

func assignValues(s *sums, v *packed)      { assignValuesGeneric(s, v) }
func addValues(s *sums, v *packed)         { addValuesGeneric(s, v) }
func encodeSums(out *packed, s *sums) bool { return encodeSumsGeneric(out, s) }
