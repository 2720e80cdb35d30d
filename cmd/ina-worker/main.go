// Command ina-worker runs a synthetic data-parallel training loop for one worker of one job: each
// iteration "computes" for a while, then all-reduces a tensor through the switch and the PS, and
// (with -seed) checks the result against the exact sum of every worker's deterministic tensor.
//
//	ina-worker -iface h1-eth0 -job 1 -rank 0 -workers 2 -size 65536 -iters 20 -seed 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/schedstat"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

func main() {
	var (
		iface    = flag.String("iface", "", "interface (AF_PACKET; needs root)")
		job      = flag.Uint("job", 1, "job id")
		rank     = flag.Int("rank", 0, "this worker's rank (its bit in the bitmap)")
		member   = flag.Uint("member", envUint("INAPACK_MEMBER"), "this worker's index among the job's workers behind its switch port, 0..15 (default $INAPACK_MEMBER, else 0)")
		workers  = flag.Int("workers", 2, "workers in the job")
		prio     = flag.Uint("priority", 0, "requested priority (the switch clamps it to the job's cap)")
		slotBase = flag.Uint("slot-base", 0, "first aggregator slot of the job")
		window   = flag.Int("window", 16, "slots of the job = most chunks in flight")
		size     = flag.Int("size", 64*1024, "tensor size in values")
		iters    = flag.Int("iters", 10, "iterations")
		compute  = flag.Duration("compute", 0, "simulated compute time per iteration")
		dtype    = flag.String("dtype", "int32", "int32 or float32")
		scale    = flag.Float64("scale", 1024, "float32 fixed-point scale; -seed tensors are integers/scale, so with a power of two the check is exact")
		seed     = flag.Uint64("seed", 0, "deterministic tensors from (seed, rank, iteration) and exact checks; 0: no checks")
		myIP     = flag.String("ip", "", "this worker's IPv4 address (default 10.0.<job>.<rank+1>)")
		psIP     = flag.String("ps-ip", "10.0.0.100", "the PS's IPv4 address")
		psMAC    = flag.String("ps-mac", "ff:ff:ff:ff:ff:ff", "destination MAC of data frames (the PS's)")
		progress = flag.Duration("progress-timeout", 5*time.Second, "fail when no chunk completes for this long")
		quiet    = flag.Bool("quiet", false, "no per-iteration lines")
		checked  = flag.Bool("integrity", true, "carry the integrity lane and check every result (the job's PS and workers must agree)")
		threads  = flag.Int("threads", 0, "threads (each with its own ring pair, owning the chunks whose seq is its index mod the threads); 0: worker.AutoThreads, one per four of the cores GOMAXPROCS allows (a container's CPU limit), so one below eight; a power of two dividing -window")
		trace    = flag.Bool("trace", false, "log every backoff of the retransmission timer to stderr (the oldest chunk out, the chunks out, the silence, the window)")
	)
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix(fmt.Sprintf("ina-worker job %d rank %d: ", *job, *rank))
	if *iface == "" {
		log.Fatal("need -iface (see -h)")
	}
	if *dtype != "int32" && *dtype != "float32" {
		log.Fatalf("-dtype %q: want int32 or float32", *dtype)
	}
	switch {
	case *job == 0 || *job >= wire.MaxJobs:
		log.Fatalf("-job %d: want 1..%d", *job, wire.MaxJobs-1)
	case *prio > 255:
		log.Fatalf("-priority %d: want 0..255", *prio)
	case *member >= wire.MaxMembers:
		log.Fatalf("-member %d: want 0..%d", *member, wire.MaxMembers-1)
	case *slotBase >= wire.NumSlots:
		log.Fatalf("-slot-base %d: want 0..%d", *slotBase, wire.NumSlots-1)
	case *size < 1 || *iters < 1:
		log.Fatalf("-size %d, -iters %d: both must be at least 1", *size, *iters)
	case !(*scale > 0) || math.IsInf(*scale, 0):
		log.Fatalf("-scale %v: want a positive, finite number", *scale)
	}
	dst, err := net.ParseMAC(*psMAC)
	if err != nil {
		log.Fatalf("-ps-mac: %v", err)
	}
	if *myIP == "" {
		*myIP = fmt.Sprintf("10.0.%d.%d", *job%256, *rank+1)
	}
	srcIP, dstIP := net.ParseIP(*myIP).To4(), net.ParseIP(*psIP).To4()
	if srcIP == nil || dstIP == nil {
		log.Fatalf("-ip %q, -ps-ip %q: want IPv4 addresses", *myIP, *psIP)
	}
	n := *threads
	if n == 0 {
		n = worker.AutoThreads(*window)
	}
	if n < 1 || n&(n-1) != 0 || *window%n != 0 {
		log.Fatalf("-threads %d: want a power of two dividing -window %d", n, *window)
	}
	// Only this job's INA frames, and of those only the thread's own chunks: other agents on this
	// host, and the other threads, do not wake this one.
	var ts []*transport.Packet
	var tr []transport.Transport
	for k := range n {
		t, err := transport.OpenPacketConfig(*iface, transport.PacketConfig{Jobs: []uint16{uint16(*job)}, Lane: k, Lanes: n, Blocking: transport.WaitBlocking(n)})
		if err != nil {
			log.Fatal(err)
		}
		defer t.Close()
		ts, tr = append(ts, t), append(tr, t)
	}
	cfg := worker.Config{Job: uint16(*job), Rank: *rank, Workers: *workers, Priority: uint8(*prio), Member: uint8(*member),
		SlotBase: uint16(*slotBase), Window: *window, SrcMAC: ts[0].MAC(), DstMAC: dst,
		SrcIP: srcIP, DstIP: dstIP, ProgressTimeout: *progress, NoIntegrity: !*checked, Trace: traceLogger(*trace)}
	var w allReducer
	if n == 1 {
		ww, err := worker.New(cfg, ts[0])
		if err != nil {
			log.Fatal(err)
		}
		w = ww
	} else {
		g, err := worker.NewGroup(cfg, tr)
		if err != nil {
			log.Fatal(err)
		}
		defer g.Close()
		w = g
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l := loop{w: w, t: ts, job: uint16(*job), rank: *rank, workers: *workers, size: *size, float: *dtype == "float32",
		scale: *scale, seed: *seed, quiet: *quiet}
	err = l.run(ctx, *iters, *compute)
	l.summary(err)
	if err != nil {
		os.Exit(1)
	}
}

// allReducer is a worker on one thread (worker.Worker) or several (worker.Group).
type allReducer interface {
	AllReduceInt32(ctx context.Context, data []int32) error
	AllReduceFloat32(ctx context.Context, data []float32, scale float64) error
	Snapshot() worker.StatsSnapshot
}

type loop struct {
	w             allReducer
	t             []*transport.Packet
	job           uint16
	rank, workers int
	size          int
	float         bool
	scale         float64
	seed          uint64
	quiet         bool

	done, ok, bad int
	timed         int // iterations counted in reduceTime
	values        int // values that differed from the exact sum
	reduceTime    time.Duration
	start         time.Time
}

func (l *loop) run(ctx context.Context, iters int, compute time.Duration) error {
	ints := make([]int32, l.size)
	floats := make([]float32, 0)
	if l.float {
		floats = make([]float32, l.size)
	}
	want := make([]int64, l.size)
	l.start = time.Now()
	for it := range iters {
		if compute > 0 {
			select {
			case <-time.After(compute):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if l.seed != 0 {
			worker.SyntheticWithSum(l.seed, l.job, l.rank, l.workers, it, ints, want)
		} else {
			worker.Synthetic(l.seed, l.job, l.rank, it, ints)
		}
		before := l.w.Snapshot()
		t0 := time.Now()
		var err error
		if l.float {
			for i, v := range ints {
				floats[i] = float32(float64(v) / l.scale)
			}
			err = l.w.AllReduceFloat32(ctx, floats, l.scale)
		} else {
			err = l.w.AllReduceInt32(ctx, ints)
		}
		d := time.Since(t0)
		after := l.w.Snapshot()
		if err != nil && !errors.Is(err, worker.ErrOverflow) {
			return fmt.Errorf("iteration %d: %w", it, err)
		}
		l.done++
		if it > 0 || iters == 1 {
			// The first all-reduce also waits for the peers to start: goodput leaves it out.
			l.reduceTime += d
			l.timed++
		}
		verdict := "unchecked"
		if l.seed != 0 {
			n := 0
			for i, s := range want {
				// float32: the fixed-point sum is exact, so the result is the exact sum rounded once.
				if l.float && floats[i] != float32(float64(s)/l.scale) || !l.float && int64(ints[i]) != s {
					n++
				}
			}
			if n == 0 && err == nil {
				l.ok++
				verdict = "exact"
			} else {
				l.bad++
				l.values += n
				verdict = fmt.Sprintf("WRONG (%d values, %v)", n, err)
			}
		}
		if !l.quiet {
			// What this call waited on besides the data (make bench's tail rows attribute slow
			// iterations to these): retransmissions by the timer and fast ones, window cuts; and the
			// timer's estimate at the end of the call.
			timer := (after.Resent - after.FastResent) - (before.Resent - before.FastResent)
			fmt.Printf("worker: job=%d rank=%d iter=%d allreduce_ms=%.3f goodput_mbps=%.3f timer_resent=%d fast_resent=%d window_cuts=%d timer_backoffs=%d rto_ms=%.1f result=%s\n",
				l.job, l.rank, it, d.Seconds()*1e3, mbps(4*l.size, d), timer, after.FastResent-before.FastResent,
				after.WindowCuts-before.WindowCuts, after.TimerBackoffs-before.TimerBackoffs, after.RTO.Seconds()*1e3, verdict)
		}
	}
	return nil
}

func (l *loop) summary(err error) {
	s := l.w.Snapshot()
	status := "ok"
	if err != nil {
		status = "error"
	} else if l.bad > 0 {
		status = "wrong"
	}
	var gp float64
	if l.reduceTime > 0 {
		gp = mbps(4*l.size*l.timed, l.reduceTime)
	}
	var drops uint64
	for _, t := range l.t {
		drops += t.Stats().KernelDrops
	}
	// How long this worker waited, runnable, for a CPU: on a machine with more busy processes
	// than cores that delays its packets as much as a queue does.
	var runq string
	if st, err := schedstat.Read(0); err == nil {
		runq = fmt.Sprintf(" cpu_ms=%.1f runq_ms=%.1f", float64(st.Run)/1e6, float64(st.Wait)/1e6)
	}
	fmt.Printf("worker-summary: job=%d rank=%d status=%s iterations=%d exact=%d wrong=%d wrong_values=%d goodput_mbps=%.3f wall_s=%.3f sent=%d resent=%d bypass=%d overflow_results=%d ecn=%d window_cuts=%d timer_backoffs=%d ignored_results=%d fast_resent=%d plain_resent=%d corrupt=%d corrupt_redirects=%d kernel_drops=%d%s\n",
		l.job, l.rank, status, l.done, l.ok, l.bad, l.values, gp, time.Since(l.start).Seconds(), s.DataSent, s.Resent,
		s.BypassSent, s.Overflows, s.ECN, s.WindowCuts, s.TimerBackoffs, s.ResultsIgnored, s.FastResent,
		s.PlainResent, s.Corrupt, s.CorruptRedirects, drops, runq)
	if err != nil {
		fmt.Printf("worker-error: job=%d rank=%d %v\n", l.job, l.rank, err)
	}
}

func mbps(bytes int, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e6 }

// traceLogger is the worker's Config.Trace for -trace: text records on stderr, or nil.
func traceLogger(on bool) *slog.Logger {
	if !on {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

// envUint is the unsigned number in environment variable name, 0 when it is unset; a value that
// is not a number is fatal, so a misspelt INAPACK_MEMBER never runs a worker as member 0.
func envUint(name string) uint {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil {
		log.Fatalf("$%s=%q: want a number 0..255", name, v)
	}
	return uint(n)
}
