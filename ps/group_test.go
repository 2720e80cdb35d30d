package ps

import (
	"errors"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

// A PS on four lanes, each handed the chunks whose seq is its lane mod 4 (as LaneFilter hands
// them out), sums every chunk once and exactly, answers a RESEND from the lane that kept the
// result, keeps its seqs in home slots (none spilled to the map: the lane's seqs are four apart),
// and its counters sum over the lanes.
func TestGroupLanes(t *testing.T) {
	const threads, chunks, workers = 4, 1000, 3
	g, err := NewGroup(Config{MAC: psMAC, IP: psIP, Jobs: []JobConfig{{Job: 7, Workers: workers, Window: 64}}}, threads)
	if err != nil {
		t.Fatal(err)
	}
	results := map[uint32]int32{}
	lanesOf := map[uint32]int{}
	for seq := uint32(0); seq < chunks; seq++ {
		k := int(seq % threads)
		var frames [][]byte
		for w := range workers {
			frames = append(frames, data(7, seq, 1<<w, 0, int32(seq)+int32(w)))
		}
		if seq%100 == 99 { // a RESEND of a chunk 40 back: answered from its lane's kept result
			frames = append(frames, data(7, seq-40, 1, wire.FlagResend, int32(seq-40)))
		}
		g.Lane(k).HandleBatch(frames, func(b []byte) {
			var f wire.Frame
			if err := f.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if f.INA.Seq%threads != seq%threads {
				t.Fatalf("lane %d answered seq %d", k, f.INA.Seq)
			}
			if unicast := f.INA.Flags == wire.FlagUnicast && f.INA.Bitmap == 1 && f.INA.Seq == seq-40; !unicast &&
				(f.INA.Flags != 0 || f.INA.Bitmap != 1<<workers-1) {
				t.Fatalf("seq %d: result flags %v bitmap %b", f.INA.Seq, f.INA.Flags, f.INA.Bitmap)
			}
			if _, ok := results[f.INA.Seq]; ok && f.INA.Seq == seq {
				t.Fatalf("seq %d: summed twice", seq)
			}
			results[f.INA.Seq] = f.INA.Values[0]
			lanesOf[f.INA.Seq]++
		})
	}
	for seq := uint32(0); seq < chunks; seq++ {
		if want := 3*int32(seq) + 0 + 1 + 2; results[seq] != want {
			t.Fatalf("seq %d: sum %d, want %d", seq, results[seq], want)
		}
	}
	c, ok := g.Counters(7)
	if !ok || c.Results != chunks || c.ResendAnswered != chunks/100 || c.ResendUnicast != chunks/100 || c.Merged != workers*chunks {
		t.Errorf("counters over the lanes: %v", c)
	}
	if gl := g.Global(); gl.Frames != workers*chunks+chunks/100 {
		t.Errorf("global: %+v", gl)
	}
	for k := range threads {
		j := g.Lane(k).jobs[7]
		if len(j.kept.spill) != 0 || len(j.pending.spill) != 0 {
			t.Errorf("lane %d: %d kept and %d pending seqs spilled out of their home slots", k, len(j.kept.spill), len(j.pending.spill))
		}
	}
	if !g.RemoveJob(7) {
		t.Error("RemoveJob(7): not served")
	}
	if _, ok := g.Counters(7); ok {
		t.Error("job 7 still served after RemoveJob")
	}
	for _, n := range []int{0, 3, 128} {
		if _, err := NewGroup(Config{MAC: psMAC, IP: psIP}, n); !errors.Is(err, ErrConfig) {
			t.Errorf("%d threads: %v", n, err)
		}
	}
}
