package bench

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// The agents' CPU per chunk in memory: one worker and the PS against the Go model of the switch,
// no kernel. Each thread of the worker runs on a locked OS thread with its own loop, a transport
// whose Flush carries the queued frames through the switch model to the PS and the PS's results
// back through the switch, in three batches, before the worker reads them. The thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID, user and system) is read around each batch, so the worker's share is
// the thread's CPU less the switch's and the PS's: a fast network that answers at once, with the
// worker's own cost left as it would be behind a NIC ring.

const (
	memWorkerPort = 1
	memPSPort     = 2
)

var (
	memWorkerMAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	memPSMAC     = net.HardwareAddr{2, 0, 0, 0, 0, 2}
	memWorkerIP  = net.IPv4(10, 0, 0, 1).To4()
	memPSIP      = net.IPv4(10, 0, 0, 100).To4()
)

// threadCPU is the calling OS thread's CPU time, user and system.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// processCPU is the process's CPU time so far, user and system, every thread.
func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// arena hands out frame buffers that are all given back at once.
type arena struct {
	bufs [][]byte
	used int
}

func (a *arena) get() []byte {
	if a.used == len(a.bufs) {
		a.bufs = append(a.bufs, make([]byte, 2048))
	}
	b := a.bufs[a.used]
	a.used++
	return b
}

// memLoop is one worker thread's transport: the switch model and a PS behind a Flush.
type memLoop struct {
	sw           *model.Switch
	ps           *ps.Server
	tx           arena    // frames queued by the worker
	txq          [][]byte // queued, in order
	net          arena    // frames inside the loop, reset at each Flush (rx is empty by then)
	toPS, rx     [][]byte
	rxHead       int
	outs         []model.Output
	swCPU, psCPU time.Duration
	frames       int
	emit         func([]byte)
	closed       bool
	clock        bool // read the thread's CPU clock around each stage (one thread only: see runMem)
}

// newMemLoop returns a loop through its own switch model to srv, the PS (or one lane of it) of a
// job of one worker with window slots; clock says whether Flush reads the thread's CPU clock.
func newMemLoop(window int, srv *ps.Server, clock bool) (*memLoop, error) {
	l := &memLoop{sw: model.New(), ps: srv, clock: clock}
	st := model.DefaultSettings()
	st.ActiveSlots = uint16(window)
	l.sw.SetSettings(st)
	l.sw.NewFrame = func(int) []byte { return l.net.get() }
	if err := l.sw.SetJob(model.JobKey{Job: 1, Port: memWorkerPort}, model.JobEntry{Role: model.RoleWorker,
		WorkerBit: 1, FanIn: 1, PriorityCap: 7, INAEnabled: true}); err != nil {
		return nil, err
	}
	if err := l.sw.SetJob(model.JobKey{Job: 1, Port: memPSPort}, model.JobEntry{Role: model.RoleResult, McastGroup: 1}); err != nil {
		return nil, err
	}
	if err := l.sw.SetPS(1, model.PSEntry{Port: memPSPort, MAC: [6]byte(memPSMAC), IP: [4]byte(memPSIP)}); err != nil {
		return nil, err
	}
	if err := l.sw.SetMcastGroup(1, []uint16{memWorkerPort}); err != nil {
		return nil, err
	}
	l.emit = func(b []byte) { c := l.net.get(); l.rx = append(l.rx, c[:copy(c, b)]) }
	return l, nil
}

// Send implements transport.Transport (the worker queues instead, through Batcher).
func (l *memLoop) Send(f []byte) error {
	if err := l.Queue(f); err != nil {
		return err
	}
	return l.Flush()
}

// Queue implements transport.Batcher.
func (l *memLoop) Queue(f []byte) error {
	b := l.tx.get()
	l.txq = append(l.txq, b[:copy(b, f)])
	return nil
}

// Flush implements transport.Batcher: the queued frames go through the switch, the PS and the
// switch again, each stage a batch between two reads of the thread's CPU clock.
func (l *memLoop) Flush() error {
	if len(l.txq) == 0 {
		return nil
	}
	l.net.used, l.rx, l.rxHead, l.toPS = 0, l.rx[:0], 0, l.toPS[:0]
	var t0, t1, t2, t3 time.Duration
	if l.clock {
		t0 = threadCPU()
	}
	for _, f := range l.txq {
		l.outs = l.sw.ProcessAppend(l.outs[:0], memWorkerPort, f)
		for _, o := range l.outs {
			if o.Port == memPSPort {
				l.toPS = append(l.toPS, o.Frame)
			}
		}
	}
	l.frames += len(l.txq)
	l.txq, l.tx.used = l.txq[:0], 0
	if l.clock {
		t1 = threadCPU()
	}
	l.ps.HandleBatch(l.toPS, l.emit) // results land in rx, to go through the switch next
	if l.clock {
		t2 = threadCPU()
	}
	results := len(l.rx)
	for i := 0; i < results; i++ {
		l.outs = l.sw.ProcessAppend(l.outs[:0], memPSPort, l.rx[i])
		for _, o := range l.outs {
			if o.Port == memWorkerPort {
				l.rx = append(l.rx, o.Frame)
			}
		}
	}
	l.rxHead = results // the PS's frames are behind us: the worker reads the switch's copies
	if l.clock {
		t3 = threadCPU()
		l.swCPU += t1 - t0 + t3 - t2
		l.psCPU += t2 - t1
	}
	return nil
}

// Recv implements transport.Transport: everything the last Flush brought back is waiting; with
// nothing waiting nothing can come (the loop answers within Flush).
func (l *memLoop) Recv(buf []byte, _ time.Time) (int, error) {
	if l.closed {
		return 0, transport.ErrClosed
	}
	if l.rxHead == len(l.rx) {
		return 0, transport.ErrTimeout
	}
	f := l.rx[l.rxHead]
	l.rxHead++
	return copy(buf, f), nil
}

// Close implements transport.Transport.
func (l *memLoop) Close() error { l.closed = true; return nil }

// memResult is one in-memory run: chunks completed, CPU by part, and the wall time.
type memResult struct {
	chunks                 int // results delivered
	worker, switches, psCP time.Duration
	wall                   time.Duration
	proc                   time.Duration // the process's CPU, every thread and part (and the runtime's)
	data                   []float32     // the tensor after the last call
}

// perChunk is d per chunk, in ns.
func (r memResult) perChunk(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / float64(r.chunks)
}

// memOpts is an in-memory run: a float32 tensor of size values all-reduced iters times, on threads
// worker threads. With split (one thread only) the loop reads the thread's CPU clock around each
// stage of a batch, which splits the CPU into the worker's, the switch's and the PS's: four system
// calls a batch, some 40 ns a chunk on this host, left out of a run without it.
type memOpts struct {
	size, iters, window, threads int
	noIntegrity, split           bool
	warmup                       time.Duration // calls before the timed ones, for at least this long
}

// runMem runs one worker (threads threads, each with its loop) for o.iters all-reduce calls.
func runMem(o memOpts) (memResult, error) {
	loops := make([]*memLoop, o.threads)
	ts := make([]transport.Transport, o.threads)
	// The PS on as many lanes as the worker has threads, as ina-ps -threads runs it: thread k's
	// loop goes to lane k, which expects the seqs of its lane (a plain server given every other seq
	// left half its seq table unused and looked up the rest in a map, in the two-thread run only).
	psg, err := ps.NewGroup(ps.Config{MAC: memPSMAC, IP: memPSIP,
		Jobs: []ps.JobConfig{{Job: 1, Workers: 1, Window: o.window, NoIntegrity: o.noIntegrity}}}, o.threads)
	if err != nil {
		return memResult{}, err
	}
	for i := range loops {
		// The thread clock is read for one thread only: a group's threads move between OS threads
		// and are timed by the process's CPU.
		l, err := newMemLoop(o.window, psg.Lane(i), o.split && o.threads == 1)
		if err != nil {
			return memResult{}, err
		}
		loops[i], ts[i] = l, l
	}
	cfg := worker.Config{Job: 1, Rank: 0, Workers: 1, Priority: 1, Window: o.window, InitialWindow: o.window,
		SrcMAC: memWorkerMAC, DstMAC: memPSMAC, SrcIP: memWorkerIP, DstIP: memPSIP, NoIntegrity: o.noIntegrity}
	data := make([]float32, o.size)
	for i := range data {
		data[i] = float32(i%1000) / 1024
	}
	var call func() error
	var cpu func() time.Duration
	var results func() uint64
	if o.threads == 1 {
		// A plain Worker, called from one locked thread, whose CPU clock is read in place.
		w, err := worker.New(cfg, ts[0])
		if err != nil {
			return memResult{}, err
		}
		calls, done := make(chan struct{}), make(chan error)
		var used time.Duration
		go func() {
			runtime.LockOSThread()
			for range calls {
				err := w.AllReduceFloat32(context.Background(), data, 0)
				used = threadCPU()
				done <- err
			}
		}()
		defer close(calls)
		call = func() error { calls <- struct{}{}; return <-done }
		cpu = func() time.Duration { return used }
		results = func() uint64 { return w.Snapshot().Results }
	} else {
		w, err := worker.NewGroup(cfg, ts)
		if err != nil {
			return memResult{}, err
		}
		defer w.Close()
		// Only the wall time counts here: the group's threads move between OS threads, so no
		// thread clock follows one (the loops' readings are not reported either).
		call = func() error { return w.AllReduceFloat32(context.Background(), data, 0) }
		cpu = func() time.Duration { return 0 }
		results = func() uint64 { return w.Snapshot().Results }
	}
	// Calls first, for o.warmup and at least one: the first frames through the switch and the PS
	// fill their tables and pools, and the kernel spreads the threads over the cores. Threads that
	// start on one core share it until the kernel's load balancing moves one, some milliseconds
	// later; a timed run of 15 ms measured that placement, not the agents (two threads gained
	// 1.01x with no warm-up, 1.82-1.87x in make bench after 300 ms of calls: docs/agents.md).
	for warm := time.Now(); ; {
		if err := call(); err != nil {
			return memResult{}, err
		}
		if time.Since(warm) >= o.warmup {
			break
		}
	}
	for _, l := range loops {
		l.swCPU, l.psCPU = 0, 0
	}
	// The setup's garbage (a switch model, a PS and their tables per thread, the tensor) is
	// collected now, not by the runtime during the timed calls: a collection then takes a P and
	// stops the world, which on a two-core host cost the two-thread run a fifth more CPU per
	// chunk and most of its second core (the calls themselves allocate a few KB).
	runtime.GC()
	cpu0, res0 := cpu(), results()
	proc0, start := processCPU(), time.Now()
	for range o.iters {
		if err := call(); err != nil {
			return memResult{}, err
		}
	}
	r := memResult{wall: time.Since(start), proc: processCPU() - proc0, chunks: int(results() - res0)}
	for _, l := range loops {
		r.switches += l.swCPU
		r.psCP += l.psCPU
	}
	r.worker = cpu() - cpu0 - r.switches - r.psCP
	r.data = data
	if r.chunks == 0 {
		return r, fmt.Errorf("no chunk completed")
	}
	return r, nil
}

// agentsOpts are ina-bench agents' flags.
type agentsOpts struct {
	size, iters, window, pairs int
	veth                       bool
	prefix                     string
	warmup, measure            time.Duration
}

// agents measures the agents' CPU per chunk and prints one "agents:" line of key=value, each the
// median over o.pairs interleaved repetitions (the machine is shared: the members of a pair run
// back to back, and a ratio is the median of the pairs' ratios):
//
//   - in memory (runMem: one worker, the switch model and the PS, float32 calls of o.size values):
//     worker_ns, ps_ns and switch_ns, CPU per chunk on one thread (a run with the clock split);
//     t1_cps and t2_cps, chunks per second of wall time on one and on two threads (runs without
//     it, as the rest); scaling, t2 / t1; t1_proc_ns and t2_proc_ns,
//     the process's CPU per chunk (every part and the runtime) on one and two threads, and
//     t1_cores and t2_cores, that CPU over the wall time: the cores the host gave the run (t2/t1
//     is the cores ratio over the CPU-per-chunk ratio); host_t1 and host_t2, a spin loop's steps
//     per second on one and two threads (spinRate: what the host gives two threads at that
//     moment);
//   - with o.veth (root), over AF_PACKET rings on veths (path, one worker): af_worker_ns, the
//     worker agent's process CPU per chunk, and af_floor_ns, the bare ring loop's for the same
//     frames on the same path (the kernel's floor), and af_ratio, the first over the second;
//     af_t1_mbps and af_t2_mbps, the agent's goodput on one thread and on two (worker.Group, a
//     socket each), and af_t2_ns, its CPU per chunk on two.
func agents(o agentsOpts) (map[string]float64, error) {
	var w, p, s, t1, t2, sc, h1, h2, pc1, pc2, co1, co2 []float64
	for range o.pairs {
		// The host's own 2/1 first: the same work on one and on two threads, nothing shared.
		a, b := spinRate(1), spinRate(2)
		h1, h2 = append(h1, a), append(h2, b)
		// One thread twice: with the clock split for the parts' CPU, and as the two threads run,
		// without it, for the ratios (the clock's system calls would be the one thread's alone).
		r1s, err := runMem(memOpts{size: o.size, iters: o.iters, window: o.window, warmup: o.warmup, threads: 1, split: true})
		if err != nil {
			return nil, fmt.Errorf("in memory, 1 thread: %w", err)
		}
		r1, err := runMem(memOpts{size: o.size, iters: o.iters, window: o.window, warmup: o.warmup, threads: 1})
		if err != nil {
			return nil, fmt.Errorf("in memory, 1 thread: %w", err)
		}
		r2, err := runMem(memOpts{size: o.size, iters: o.iters, window: o.window, warmup: o.warmup, threads: 2})
		if err != nil {
			return nil, fmt.Errorf("in memory, 2 threads: %w", err)
		}
		c1, c2 := float64(r1.chunks)/r1.wall.Seconds(), float64(r2.chunks)/r2.wall.Seconds()
		w, p, s = append(w, r1s.perChunk(r1s.worker)), append(p, r1s.perChunk(r1s.psCP)), append(s, r1s.perChunk(r1s.switches))
		t1, t2, sc = append(t1, c1), append(t2, c2), append(sc, c2/c1)
		pc1, pc2 = append(pc1, r1.perChunk(r1.proc)), append(pc2, r2.perChunk(r2.proc))
		co1, co2 = append(co1, r1.proc.Seconds()/r1.wall.Seconds()), append(co2, r2.proc.Seconds()/r2.wall.Seconds())
	}
	out := map[string]float64{"worker_ns": median(w), "ps_ns": median(p), "switch_ns": median(s),
		"t1_cps": median(t1), "t2_cps": median(t2), "scaling": median(sc), "host_t1": median(h1), "host_t2": median(h2),
		"t1_proc_ns": median(pc1), "t2_proc_ns": median(pc2), "t1_cores": median(co1), "t2_cores": median(co2)}
	if !o.veth {
		return out, nil
	}
	var aw, af, ar, g1, g2, a2 []float64
	for i := range o.pairs {
		po := pathOpts{workers: 1, window: o.window, warmup: o.warmup, measure: o.measure, prefix: fmt.Sprintf("%s%d", o.prefix, i)}
		floor, err := path(po)
		if err != nil {
			return nil, fmt.Errorf("AF_PACKET floor: %w", err)
		}
		po.agent = true
		agent, err := path(po)
		if err != nil {
			return nil, fmt.Errorf("AF_PACKET worker: %w", err)
		}
		po.threads = 2
		two, err := path(po)
		if err != nil {
			return nil, fmt.Errorf("AF_PACKET worker, 2 threads: %w", err)
		}
		aw, af, ar = append(aw, agent.cpuPerChunk), append(af, floor.cpuPerChunk), append(ar, agent.cpuPerChunk/floor.cpuPerChunk)
		g1, g2, a2 = append(g1, agent.goodput), append(g2, two.goodput), append(a2, two.cpuPerChunk)
	}
	out["af_worker_ns"], out["af_floor_ns"], out["af_ratio"] = median(aw), median(af), median(ar)
	out["af_t1_mbps"], out["af_t2_mbps"], out["af_t2_ns"] = median(g1), median(g2), median(a2)
	return out, nil
}

func median(v []float64) float64 { return spreadOf(v).med }

// spinRate is the host's speed on threads threads: steps per second of wall time of a loop that
// touches no memory, each thread on a locked OS thread doing the same number. On a host whose
// other core is busy, two threads get no more done than one: that bounds the agents' scaling too.
func spinRate(threads int) float64 {
	const steps = 20_000_000
	var wg sync.WaitGroup
	start := time.Now()
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			spinSink.Add(spin(steps))
		}()
	}
	wg.Wait()
	return float64(threads*steps) / time.Since(start).Seconds()
}

var spinSink atomic.Uint64

func spin(n int) uint64 {
	x := uint64(1)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
