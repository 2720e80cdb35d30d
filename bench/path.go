package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// The all-reduce's own path without the protocol: the limit "fraction of the limit" refers to.
// Per chunk it makes the same ring operations with the same frames (wire.FrameLen) through the
// same kind of interfaces and processes as ina-demo's job: each of the workers (one process and
// one veth each) sends the chunk and receives its result; the switch (one process) receives the
// workers' packets on their ports and sends one to the PS port when the last arrives, and sends
// the PS's answer out of every worker port; the PS (one process) receives one and sends one.
// Nothing is summed, checked or retransmitted beyond a lost frame's: what is left is what moving
// the frames costs on this machine.

// pathOffSeq and pathOffType are where the INA header's seq and version/type sit in a frame.
const (
	pathOffINA  = 42
	pathOffType = pathOffINA
	pathOffSeq  = pathOffINA + 8
)

type pathOpts struct {
	workers, window int
	warmup, measure time.Duration
	prefix          string
	// agent runs worker.Worker (path-agent: float32 all-reduces of 1 MiB over transport.Packet)
	// in each worker's process instead of the bare ring loop, on the same path.
	agent   bool
	threads int  // with agent: the worker's threads
	verbose bool // with agent: print each agent's line (chunks, ring polls and flushes) on stderr
}

// pathResult is a run of the path: the goodput per worker (Mbit/s of chunk values, the mean over
// the workers) and the workers' CPU time (user and system, the processes' rusage) per chunk, in ns.
type pathResult struct {
	goodput, cpuPerChunk float64
}

// path runs the bare path (or, with o.agent, the worker agent on it).
func path(o pathOpts) (pathResult, error) {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	sw, host, cleanup, err := makeVeths(o.prefix, o.workers+1) // port 0: the PS
	defer cleanup()
	if err != nil {
		return pathResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return pathResult{}, err
	}
	swStop, err := startChild(self, append([]string{"path-switch"}, sw...))
	if err != nil {
		return pathResult{}, fmt.Errorf("switch: %w", err)
	}
	defer swStop()
	psStop, err := startChild(self, []string{"path-ps", host[0]})
	if err != nil {
		return pathResult{}, fmt.Errorf("ps: %w", err)
	}
	defer psStop()
	type result struct {
		chunks, all int
		cpu         time.Duration
		err         error
	}
	role := "path-worker"
	if o.agent {
		role = "path-agent"
	}
	res := make([]result, o.workers)
	var wg sync.WaitGroup
	for r := range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{role, host[r+1], strconv.Itoa(r), strconv.Itoa(o.window), o.warmup.String(), o.measure.String()}
			if o.agent {
				args = append(args, strconv.Itoa(max(o.threads, 1)))
			}
			cmd := exec.CommandContext(ctx, self, args...)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				res[r].err = fmt.Errorf("worker %d: %w", r, err)
				return
			}
			_, res[r].err = fmt.Sscanf(strings.TrimSpace(string(out)), "chunks=%d all=%d", &res[r].chunks, &res[r].all)
			res[r].cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			if o.agent && o.verbose {
				fmt.Fprintf(os.Stderr, "path: agent %d: %s cpu_ms=%d\n", r, strings.TrimSpace(string(out)), res[r].cpu.Milliseconds())
			}
		}()
	}
	wg.Wait()
	var sum float64
	var cpu time.Duration
	all := 0
	for _, r := range res {
		if r.err != nil {
			return pathResult{}, r.err
		}
		// In tensor bits, as the agents' goodput is: their packets carry wire.IntegrityWidth
		// values besides the integrity lane (on by default).
		sum += float64(r.chunks) * 4 * wire.IntegrityWidth * 8 / o.measure.Seconds() / 1e6
		cpu += r.cpu
		all += r.all
	}
	out := pathResult{goodput: sum / float64(o.workers)}
	if all > 0 {
		out.cpuPerChunk = float64(cpu.Nanoseconds()) / float64(all)
	}
	return out, nil
}

// startChild runs ina-bench in a role and waits for its "ready" line.
func startChild(self string, args []string) (func(), error) {
	cmd := exec.Command(self, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		stop()
		return nil, fmt.Errorf("%s did not start: %v", args[0], err)
	}
	return stop, nil
}

// untilSignal prints "ready" and waits for SIGTERM, then runs stop.
func untilSignal(stop func()) {
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	stop()
}

func openRing(name string) (*afring.Socket, error) {
	return afring.Open(name, afring.Config{Promiscuous: true, RXFrames: 4096, TXFrames: 1024})
}

// pathSwitch is the switch's part: port 0 leads to the PS, ports 1.. to the workers. A chunk's
// packet is counted in its seq's entry (seq and a bitmap in one word); the packet that completes
// the bitmap goes to the PS, a repeat of a complete one too (a retransmission); the PS's
// answers go out of every worker port.
func pathSwitch(sw []string) error {
	socks := make([]*afring.Socket, len(sw))
	for i, name := range sw {
		s, err := openRing(name)
		if err != nil {
			return err
		}
		defer s.Close()
		socks[i] = s
	}
	workers := len(sw) - 1
	full := uint64(1)<<workers - 1
	var slots [4096]atomic.Uint64
	var wg sync.WaitGroup
	for i, s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var err error
				if i == 0 {
					_, err = s.Receive(-1, 64, func(f []byte) {
						for _, o := range socks[1:] {
							_ = o.Queue(f)
						}
					})
					for _, o := range socks[1:] {
						_ = o.Flush()
					}
				} else {
					bit := uint64(1) << (i - 1)
					_, err = s.Receive(-1, 64, func(f []byte) {
						if len(f) < wire.FrameLen {
							return
						}
						seq := binary.BigEndian.Uint32(f[pathOffSeq:])
						if arrive(&slots[seq%uint32(len(slots))], seq, bit, full) {
							_ = socks[0].Queue(f)
						}
					})
					_ = socks[0].Flush()
				}
				if err != nil {
					return
				}
			}
		}()
	}
	untilSignal(func() {
		for _, s := range socks {
			s.Close()
		}
		wg.Wait()
	})
	return nil
}

// arrive counts worker bit's packet for seq in entry e (seq in the high half, the workers'
// bitmap in the low one; an older seq's entry is taken over) and reports whether the packet
// goes on to the PS: it completes the bitmap, or repeats a complete one (a retransmission).
func arrive(e *atomic.Uint64, seq uint32, bit, full uint64) bool {
	for {
		old := e.Load()
		bits := old & full
		if uint32(old>>32) != seq {
			bits = 0
		}
		if bits == full {
			return true
		}
		if e.CompareAndSwap(old, uint64(seq)<<32|bits|bit) {
			return bits|bit == full
		}
	}
}

// pathPS answers every packet with a result: the same frame, typed as a result.
func pathPS(name string) error {
	s, err := openRing(name)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, err := s.Receive(-1, 64, func(f []byte) {
				if len(f) >= wire.FrameLen {
					f[pathOffType] = wire.Version<<4 | byte(wire.TypeResult)
					_ = s.Queue(f)
				}
			})
			_ = s.Flush()
			if err != nil {
				return
			}
		}
	}()
	untilSignal(func() { s.Close(); <-done })
	return nil
}

// pathWorker keeps window chunks in flight (the next one goes out as a result comes back, in
// seq order as the worker's window does) for warmup+measure and prints the chunks completed
// during measure and in all. A chunk with no result for 20 ms is sent again.
func pathWorker(name string, rank, window int, warmup, measure time.Duration) error {
	s, err := openRing(name)
	if err != nil {
		return err
	}
	defer s.Close()
	f := wire.Frame{Addr: wire.Addr{SrcMAC: []byte{2, 0, 0, 0, 2, byte(rank)}, DstMAC: []byte{2, 0, 0, 0, 0, 1},
		SrcIP: []byte{10, 0, 1, byte(rank + 1)}, DstIP: []byte{10, 0, 0, 100}}, TTL: 64, SrcPort: wire.UDPPort,
		INA: wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Bitmap: 1 << rank}}
	buf := f.Marshal()
	done := make([]bool, window)
	sent := make([]time.Time, window)
	var lo, next uint32
	send := func(seq uint32, now time.Time) error {
		binary.BigEndian.PutUint32(buf[pathOffSeq:], seq)
		sent[seq%uint32(window)] = now
		return s.Queue(buf)
	}
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+measure)
	counted, all := 0, 0
	for now := start; now.Before(end); now = time.Now() {
		for ; next-lo < uint32(window); next++ {
			done[next%uint32(window)] = false
			if err := send(next, now); err != nil {
				return err
			}
		}
		for seq := lo; seq != next; seq++ { // lost frames
			if i := seq % uint32(window); !done[i] && now.Sub(sent[i]) > 20*time.Millisecond {
				if err := send(seq, now); err != nil {
					return err
				}
			}
		}
		if err := s.Flush(); err != nil {
			return err
		}
		_, err := s.Receive(5*time.Millisecond, 0, func(b []byte) {
			if len(b) < wire.FrameLen || b[pathOffType]&0x0f != byte(wire.TypeResult) {
				return
			}
			seq := binary.BigEndian.Uint32(b[pathOffSeq:])
			if seq-lo >= next-lo || done[seq%uint32(window)] {
				return
			}
			done[seq%uint32(window)] = true
			all++
			if t := time.Now(); t.After(from) && t.Before(end) {
				counted++
			}
			for lo != next && done[lo%uint32(window)] {
				lo++
			}
		})
		if err != nil {
			return err
		}
	}
	fmt.Printf("chunks=%d all=%d\n", counted, all)
	return nil
}

// pathAgent is pathWorker's part played by the worker agent: float32 all-reduces of 1 MiB (4,161
// chunks), one job of one worker with window chunks in flight, over transport.Packet (on threads
// threads, worker.Group, a socket each), for
// warmup+measure; it prints the chunks of the calls that began during measure, and all of them.
func pathAgent(name string, rank, window int, warmup, measure time.Duration, threads int) error {
	var ts []transport.Transport
	for k := range threads {
		t, err := transport.OpenPacketConfig(name, transport.PacketConfig{RXFrames: 4096, TXFrames: 1024,
			Jobs: []uint16{1}, Lane: k, Lanes: threads, Blocking: transport.WaitBlocking(threads)})
		if err != nil {
			return err
		}
		defer t.Close()
		ts = append(ts, t)
	}
	cfg := worker.Config{Job: 1, Rank: rank, Workers: 1, Priority: 1, Window: window, InitialWindow: window,
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 2, byte(rank)}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
		SrcIP: net.IP{10, 0, 1, byte(rank + 1)}, DstIP: net.IP{10, 0, 0, 100}}
	var w interface {
		AllReduceFloat32(ctx context.Context, data []float32, scale float64) error
		Snapshot() worker.StatsSnapshot
	}
	if threads == 1 { // as ina-worker runs one thread
		ww, err := worker.New(cfg, ts[0])
		if err != nil {
			return err
		}
		w = ww
	} else {
		g, err := worker.NewGroup(cfg, ts)
		if err != nil {
			return err
		}
		defer g.Close()
		w = g
	}
	data := make([]float32, 262144)
	for i := range data {
		data[i] = float32(i%1000) / 1024
	}
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+measure)
	counted := uint64(0)
	for now := start; now.Before(end); now = time.Now() {
		before := w.Snapshot().Results
		if err := w.AllReduceFloat32(context.Background(), data, 0); err != nil {
			return err
		}
		if now.After(from) {
			counted += w.Snapshot().Results - before
		}
	}
	var polls, flushes uint64
	for _, t := range ts {
		st := t.(*transport.Packet).Stats()
		polls, flushes = polls+st.Polls, flushes+st.Flushes
	}
	fmt.Printf("chunks=%d all=%d polls=%d flushes=%d\n", counted, w.Snapshot().Results, polls, flushes)
	return nil
}
