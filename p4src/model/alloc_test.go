package model

import (
	"net/netip"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// With a recycling NewFrame and a reused output slice, no packet kind allocates: the reference
// switch relies on it for its hot path.
func TestProcessAppendAllocatesNothing(t *testing.T) {
	s := setup2(t)
	must(t, s.SetJob(JobKey{1, 7, 0}, JobEntry{Role: RoleResult, McastGroup: 1}))
	must(t, s.SetMcastGroup(1, []uint16{1, 2}))
	must(t, s.SetRoute(Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 3}))
	buf := make([]byte, 2048)
	s.NewFrame = func(n int) []byte { return buf[:n] }
	const runs = 100
	// Chunk q is claimed by port 1 and completed by port 2: one packet to the PS per two in.
	var data [2 * (runs + 1)][]byte
	for i := range data {
		data[i] = frame(1, 0, uint32(i/2), 1)
	}
	result := frame(1, 0, 1, 5)
	result[offINA] = wire.Version<<4 | uint8(wire.TypeResult)
	plain := frame(1, 0, 1, 0)
	plain[offUDPDport] = 0
	copy(plain[offIPDst:], []byte{10, 1, 2, 3})
	deparse(plain, false) // the checksum of the new destination: a bad one is not routed
	outs := make([]Output, 0, 8)
	i := 0
	for _, c := range []struct {
		name string
		run  func() []Output
		n    int
	}{
		{"aggregate+complete", func() []Output {
			s.ProcessAppend(outs[:0], 1, data[i])
			o := s.ProcessAppend(outs[:0], 2, data[i+1])
			i += 2
			return o
		}, 1},
		{"result", func() []Output { return s.ProcessAppend(outs[:0], 7, result) }, 2},
		{"ipv4", func() []Output { return s.ProcessAppend(outs[:0], 9, plain) }, 1},
	} {
		var got []Output
		if allocs := testing.AllocsPerRun(runs, func() { got = c.run() }); allocs != 0 {
			t.Errorf("%s: %.1f allocations per packet, want 0", c.name, allocs)
		}
		if len(got) != c.n {
			t.Errorf("%s: %d outputs, want %d", c.name, len(got), c.n)
		}
	}
}
