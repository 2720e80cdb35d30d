package bench

import (
	"testing"
	"time"
)

func TestMemRun(t *testing.T) {
	for _, threads := range []int{1, 2} {
		// A warm-up of some calls (a call here takes about a millisecond), none of them timed.
		r, err := runMem(memOpts{size: 63 * 1000, iters: 3, window: 64, threads: threads, split: true, warmup: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.chunks != 3000 {
			t.Errorf("%d threads: %d chunks completed, want 3000", threads, r.chunks)
		}
		// One worker: the sum is its own tensor, exact in fixed point (multiples of 2^-10).
		for i, v := range r.data {
			if want := float32(i%1000) / 1024; v != want {
				t.Fatalf("%d threads: value %d is %v after 3 all-reduces, want %v", threads, i, v, want)
			}
		}
		if threads == 1 {
			t.Logf("worker %.0f ns/chunk, PS %.0f, switch %.0f, wall %.0f", r.perChunk(r.worker), r.perChunk(r.psCP), r.perChunk(r.switches), r.perChunk(r.wall))
			if r.worker <= 0 || r.psCP <= 0 || r.switches <= 0 {
				t.Errorf("CPU per part: worker %v, PS %v, switch %v", r.worker, r.psCP, r.switches)
			}
		}
	}
}

func benchMem(b *testing.B, threads int) {
	const size = 63 * 4096
	var tot memResult
	for b.Loop() {
		r, err := runMem(memOpts{size: size, iters: 1, window: 64, threads: threads, split: true})
		if err != nil {
			b.Fatal(err)
		}
		tot.chunks += r.chunks
		tot.worker += r.worker
		tot.psCP += r.psCP
		tot.switches += r.switches
		tot.wall += r.wall
		tot.proc += r.proc
	}
	if threads == 1 { // the threads of a group have no clock of their own (runMem)
		b.ReportMetric(tot.perChunk(tot.worker), "worker-cpu-ns/chunk")
		b.ReportMetric(tot.perChunk(tot.psCP), "ps-cpu-ns/chunk")
		b.ReportMetric(tot.perChunk(tot.switches), "switch-cpu-ns/chunk")
	}
	b.ReportMetric(float64(tot.chunks)/tot.wall.Seconds(), "chunks/s")
	// Every thread's CPU (worker, switch model, PS, runtime) per chunk, and the cores it kept busy;
	// one thread's includes the clock reads of the split (some 40 ns a chunk), two threads' not.
	b.ReportMetric(tot.perChunk(tot.proc), "proc-cpu-ns/chunk")
	b.ReportMetric(tot.proc.Seconds()/tot.wall.Seconds(), "cores")
}

func BenchmarkAgentsInMemory1Thread(b *testing.B)  { benchMem(b, 1) }
func BenchmarkAgentsInMemory2Threads(b *testing.B) { benchMem(b, 2) }
