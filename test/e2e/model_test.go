package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/worker"
)

// contendedJobs share 16 slots: windows overlap so the jobs collide and the higher priorities
// preempt the lower ones.
func contendedJobs(iters int) []jobSpec {
	return []jobSpec{
		{id: 1, workers: 2, priority: 1, slotBase: 0, window: 8, ina: true, values: 64 * 48, iters: iters, killRank: -1},
		{id: 2, workers: 4, priority: 3, slotBase: 4, window: 8, ina: true, values: 64*40 + 17, iters: iters, killRank: -1},
		{id: 3, workers: 8, priority: 5, slotBase: 8, window: 8, ina: true, values: 64 * 32, iters: iters, killRank: -1},
		{id: 4, workers: 3, priority: 2, slotBase: 2, window: 8, ina: false, values: 64 * 16, iters: iters, killRank: -1},
	}
}

func TestContendedJobsExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		imp  Impairment
		atp  bool   // release slots when the result passes (ATP) instead of at completion (ESA)
		ecn  uint32 // egress queue depth that marks ECN
	}{
		{"clean", Impairment{}, false, wire.MaxECNThreshold},
		{"1pct", Impairment{Loss: 0.01, Dup: 0.01, Reorder: 0.01}, false, wire.MaxECNThreshold},
		{"5pct", Impairment{Loss: 0.05, Dup: 0.05, Reorder: 0.05}, false, wire.MaxECNThreshold},
		{"atp_1pct", Impairment{Loss: 0.01, Dup: 0.01, Reorder: 0.01}, true, wire.MaxECNThreshold},
		{"ecn", Impairment{}, false, 0}, // threshold 0 marks every data packet: ECN whatever the timing
	} {
		t.Run(tc.name, func(t *testing.T) {
			const seed = 7
			jobs := contendedJobs(4)
			st := model.DefaultSettings()
			st.ActiveSlots = 16
			st.ReleaseOnResult = tc.atp
			st.ECNThreshold = tc.ecn
			c := newCluster(t, st, tc.imp, seed, jobs)
			defer c.close()
			// Whether the jobs meet in a slot depends on how their goroutines are scheduled, so the
			// contention the checks below count is made certain: job 1 (priority 1) holds slot 8,
			// which jobs 2 and 3 (priorities 3 and 5) use and so must preempt, and job 3 holds
			// slot 4, which jobs 1 and 2 use and cannot preempt, so they collide there. Both
			// partials carry a seq no job reaches, so they never mix with real chunks.
			must(t, c.sw.SetSlot(8, model.Slot{Job: 1, Seq: 1 << 30, Priority: 1, Bitmap: 1, Count: 1}))
			must(t, c.sw.SetSlot(4, model.Slot{Job: 3, Seq: 1 << 30, Priority: 5, Bitmap: 1, Count: 1}))
			res := c.runJobs(t, seed, jobs, 30*time.Second)
			for _, j := range jobs {
				r := res[j.id]
				for rank, err := range r.errs {
					if err != nil {
						t.Errorf("job %d rank %d: %v", j.id, rank, err)
					}
				}
				if r.mismatches != 0 {
					t.Errorf("job %d: %d values differ from the exact sum", j.id, r.mismatches)
				}
				pc, _ := c.ps.Counters(j.id)
				chunks := uint64(j.iters * ((j.values + wire.IntegrityWidth - 1) / wire.IntegrityWidth))
				// Each chunk completes exactly once at the PS: no chunk missing, none twice.
				if pc.Results != chunks {
					t.Errorf("job %d: PS emitted %d results, want %d (one per chunk)", j.id, pc.Results, chunks)
				}
				ev := c.sw.JobEvents(j.id)
				t.Logf("job %d: PS %v", j.id, pc)
				t.Logf("job %d: switch claimed=%d aggregated=%d completed=%d collision=%d preempted=%d evicted=%d stale=%d flushed=%d duplicate=%d bypass=%d",
					j.id, ev[wire.EventClaimed].Packets, ev[wire.EventAggregated].Packets, ev[wire.EventCompleted].Packets,
					ev[wire.EventCollision].Packets, ev[wire.EventPreempted].Packets, ev[wire.EventEvicted].Packets,
					ev[wire.EventStale].Packets, ev[wire.EventFlushed].Packets, ev[wire.EventDuplicate].Packets, ev[wire.EventBypass].Packets)
			}
			ev := c.sw.Events()
			if ev[wire.EventCompleted].Packets == 0 {
				t.Error("no chunk was aggregated in the switch")
			}
			if ev[wire.EventCollision].Packets == 0 {
				t.Error("the slot pool is contended but the switch counted no collision")
			}
			// evicted is counted for the victim's job only (docs/protocol.md).
			var evicted uint64
			for _, j := range jobs {
				evicted += c.sw.JobEvents(j.id)[wire.EventEvicted].Packets
			}
			if ev[wire.EventPreempted].Packets == 0 || evicted != ev[wire.EventPreempted].Packets {
				t.Errorf("preempted=%d, evicted over jobs=%d: want equal and > 0", ev[wire.EventPreempted].Packets, evicted)
			}
			if tc.ecn < wire.MaxECNThreshold {
				var marked uint64
				for _, j := range jobs {
					pc, _ := c.ps.Counters(j.id)
					marked += pc.ECNResults
				}
				if ev[wire.EventECNMarked].Packets == 0 || marked == 0 {
					t.Errorf("ECN threshold %d: switch marked %d packets, PS echoed ECN in %d results", tc.ecn, ev[wire.EventECNMarked].Packets, marked)
				}
			}
			if c.sw.JobEvents(4)[wire.EventBypass].Packets == 0 {
				t.Error("job 4 has INA disabled but no packet bypassed the slots")
			}
			t.Logf("fabric: lost=%d duplicated=%d reordered=%d", c.fab.Lost.Load(), c.fab.Duplicated.Load(), c.fab.Reordered.Load())
		})
	}
}

func TestKilledWorkerFailsOnlyItsJob(t *testing.T) {
	const seed = 11
	jobs := contendedJobs(3)[:3]
	jobs[1].killRank, jobs[1].killAfter = 2, 1 // job 2 rank 2 dies after one iteration
	// Only the dead job's peers are meant to time out; the survivors get a timeout no scheduling
	// delay on a loaded machine reaches.
	jobs[1].progress = time.Second
	st := model.DefaultSettings()
	st.ActiveSlots = 16
	c := newCluster(t, st, Impairment{Loss: 0.01}, seed, jobs)
	defer c.close()
	res := c.runJobs(t, seed, jobs, 30*time.Second)
	for _, j := range []uint16{1, 3} {
		for rank, err := range res[j].errs {
			if err != nil {
				t.Errorf("job %d rank %d: %v", j, rank, err)
			}
		}
		if res[j].mismatches != 0 {
			t.Errorf("job %d: %d wrong values", j, res[j].mismatches)
		}
	}
	for rank, err := range res[2].errs {
		if rank == 2 {
			continue
		}
		if !errors.Is(err, worker.ErrNoProgress) {
			t.Errorf("job 2 rank %d: got %v, want ErrNoProgress", rank, err)
		} else if rank == 0 {
			t.Logf("job 2 rank 0: %v", err)
		}
	}
	if res[2].mismatches != 0 {
		t.Errorf("job 2: %d wrong values before the failure", res[2].mismatches)
	}
	// A survivor that crashed right after sending a first transmission leaves a partial in a slot.
	strand := wire.Frame{Addr: wire.Addr{SrcMAC: psMAC, DstMAC: psMAC, SrcIP: psIP, DstIP: psIP}, TTL: 64,
		SrcPort: wire.UDPPort, INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 2, Slot: 5, Seq: 1 << 20}}
	if out := c.sw.Process(workerPort(2, 0), strand.Marshal()); len(out) != 0 {
		t.Fatalf("the first contribution to a free slot left the switch: %d packets", len(out))
	}
	// The controller's job removal: clear the dead job's slots; none may stay held.
	held := heldBy(c.sw, 2)
	if held == 0 {
		t.Fatal("job 2 holds no slot after a contribution was stranded")
	}
	cleared := c.sw.ClearJobSlots(2)
	if cleared != held {
		t.Errorf("ClearJobSlots cleared %d slots, %d were held", cleared, held)
	}
	if n := heldBy(c.sw, 2); n != 0 {
		t.Errorf("%d slots still held by job 2 after ClearJobSlots", n)
	}
	t.Logf("job 2 held %d slot(s) when it failed; cleared", held)
	// The slot serves other jobs again: job 1's contribution claims it.
	before := c.sw.JobEvents(1)[wire.EventClaimed].Packets
	strand.INA.Job, strand.INA.Seq = 1, 1<<20
	c.sw.Process(workerPort(1, 0), strand.Marshal())
	if c.sw.JobEvents(1)[wire.EventClaimed].Packets != before+1 {
		t.Error("job 1 could not claim the slot job 2 held")
	}
}

func heldBy(sw *model.Switch, job uint16) int {
	n := 0
	for i := range wire.NumSlots {
		if s := sw.Slot(i); !s.Free() && s.Job == job {
			n++
		}
	}
	return n
}
