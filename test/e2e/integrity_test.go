package e2e

import (
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// corruptJobs are an INA job (its chunks summed in the switch's slots) and one the switch only
// forwards, over links that flip a value bit in 2% of INA frames.
func corruptJobs(noIntegrity bool) []jobSpec {
	return []jobSpec{
		{id: 1, workers: 4, priority: 1, slotBase: 0, window: 8, ina: true, values: 64 * 40, iters: 4, killRank: -1, noIntegrity: noIntegrity},
		{id: 2, workers: 3, priority: 2, slotBase: 8, window: 8, ina: false, values: 64 * 20, iters: 4, killRank: -1, noIntegrity: noIntegrity},
	}
}

// TestCorruptionCaught: with the integrity lane on, corruption is caught (at the PS or at a
// worker) and the chunk resent, and every value of every result is exact; the same run with it
// off sums the flipped bits into wrong results. That second half is why the lane exists. (Not
// every corrupted frame needs catching: one the PS ignores anyway, such as a late duplicate or a
// RESEND it answers from a kept result, harms nothing.)
func TestCorruptionCaught(t *testing.T) {
	const seed = 11
	imp := Impairment{Corrupt: 0.02}
	for _, on := range []bool{true, false} {
		st := model.DefaultSettings()
		st.ActiveSlots = 16
		jobs := corruptJobs(!on)
		c := newCluster(t, st, imp, seed, jobs)
		res := c.runJobs(t, seed, jobs, 10*time.Second)
		c.close()
		wrong, caught := 0, uint64(0)
		for _, j := range jobs {
			r := res[j.id]
			for rank, err := range r.errs {
				if err != nil {
					t.Errorf("integrity %v: job %d rank %d: %v", on, j.id, rank, err)
				}
			}
			wrong += r.mismatches
			pc, _ := c.ps.Counters(j.id)
			var wc uint64
			for _, w := range c.workers[j.id] {
				wc += w.Snapshot().Corrupt
			}
			caught += pc.CorruptResults + pc.Corrupt + wc
			t.Logf("integrity %v: job %d: wrong values %d, caught at the PS %d (sums) + %d (exact-path copies), at the workers %d (results)",
				on, j.id, r.mismatches, pc.CorruptResults, pc.Corrupt, wc)
			if on && pc.Results != uint64(j.iters*((j.values+wire.IntegrityWidth-1)/wire.IntegrityWidth)) {
				t.Errorf("job %d: %d PS results, want one per chunk", j.id, pc.Results)
			}
		}
		t.Logf("integrity %v: %d frames corrupted, %d caught, %d wrong values", on, c.fab.Corrupted.Load(), caught, wrong)
		if c.fab.Corrupted.Load() == 0 {
			t.Fatal("no frame was corrupted")
		}
		switch {
		case on && (wrong != 0 || caught == 0):
			t.Errorf("integrity on: %d wrong values, %d corruptions caught; want 0 and some", wrong, caught)
		case !on && (wrong == 0 || caught != 0):
			t.Errorf("integrity off: %d wrong values, %d caught; want some and 0", wrong, caught)
		}
	}
}
