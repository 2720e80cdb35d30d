package refswitch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/p4src/model"
)

// maxFrame is the largest frame a port carries (the veth MTU used with BMv2 is 9500).
const maxFrame = 9600

// rxBatch is the most frames a reader takes from its ring before it wakes the writers it fed:
// enough to amortise the wake-ups, few enough that the writers start sending promptly.
const rxBatch = 64

// reorderHold is how long a packet picked for reordering waits for a later one to overtake it.
const reorderHold = 2 * time.Millisecond

// port is one switch port on a Linux interface.
type port struct {
	num    uint16
	ifname string
	sock   *afring.Socket
	q      egressQueue
	shaper *shaper     // nil: no rate limit
	faults *injector   // nil: no faults
	live   *liveFaults // non-nil with Config.FaultAPI: faults' rates change at run time
	st     portCounters
}

// dataplane connects the model to its ports: per port, a reader runs received frames through
// the model and a writer drains the port's egress queue into its TX ring.
type dataplane struct {
	sw         *model.Switch
	log        *slog.Logger
	ports      map[uint16]*port
	byNum      [maxPort + 1]*port
	configured atomic.Bool
	counters   switchCounters
	frames     framePool
	wg         sync.WaitGroup
}

// openPort opens an AF_PACKET socket with rings on an interface, promiscuous, not seeing its own
// transmissions.
func openPort(spec PortSpec, queueLen int, ring RingConfig) (*port, error) {
	if _, err := net.InterfaceByName(spec.Ifname); err != nil {
		return nil, fmt.Errorf("port %d: interface %q: %w", spec.Port, spec.Ifname, err)
	}
	rx, tx := ring.RXFrames, ring.TXFrames
	if rx == 0 {
		rx = 512
	}
	if tx == 0 {
		tx = 128
	}
	s, err := afring.Open(spec.Ifname, afring.Config{FrameSize: 16384, RXFrames: rx, TXFrames: tx, Promiscuous: true})
	if err != nil {
		return nil, fmt.Errorf("port %d: %w", spec.Port, err)
	}
	return &port{num: spec.Port, ifname: spec.Ifname, sock: s, q: newEgressQueue(queueLen)}, nil
}

// index fills byNum, the lock-free port lookup of the hot path.
func (d *dataplane) index() {
	for _, p := range d.ports {
		d.byNum[p.num] = p
	}
}

// start runs a reader and a writer per port until ctx ends.
func (d *dataplane) start(ctx context.Context) {
	d.index()
	d.sw.QueueDepth = func(p uint16) uint32 {
		if pt := d.byNum[p]; pt != nil {
			return uint32(pt.q.depth.Load())
		}
		return 0
	}
	d.sw.NewFrame = d.frames.get
	for _, p := range d.ports {
		d.wg.Add(2)
		go func() { defer d.wg.Done(); d.read(ctx, p) }()
		go func() { defer d.wg.Done(); d.write(ctx, p) }()
	}
	go func() {
		<-ctx.Done()
		for _, p := range d.ports {
			p.sock.Close() // ends the readers' Receive
		}
	}()
}

func (d *dataplane) read(ctx context.Context, p *port) {
	rs := &rxState{outs: make([]model.Output, 0, 64)}
	handle := func(frame []byte) {
		p.st.RxPackets.Add(1)
		p.st.RxBytes.Add(uint64(len(frame)))
		d.process(rs, p.num, frame)
	}
	for {
		_, err := p.sock.Receive(-1, rxBatch, handle)
		rs.wakeWriters()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, afring.ErrClosed) {
				return
			}
			if n := p.st.RxErrors.Add(1); n&(n-1) == 0 { // log the 1st, 2nd, 4th, ... error
				d.log.Warn("port read failed", "port", p.num, "interface", p.ifname, "errors", n, "err", err)
			}
			time.Sleep(10 * time.Millisecond) // do not spin on a persistent error
		}
	}
}

// rxState is a reader's scratch space: the model's outputs and the ports whose queues it fed.
type rxState struct {
	outs []model.Output
	fed  []*port
}

// wakeWriters signals every writer this batch gave a frame to, once.
func (rs *rxState) wakeWriters() {
	for _, p := range rs.fed {
		p.q.signal()
	}
	rs.fed = rs.fed[:0]
}

// process runs one frame through the model and queues what leaves. The model neither keeps nor
// changes frame, so it may be the ring slot itself.
func (d *dataplane) process(rs *rxState, in uint16, frame []byte) {
	if !d.configured.Load() {
		d.counters.noPipeline.Add(1)
		return
	}
	rs.outs = d.sw.ProcessAppend(rs.outs[:0], in, frame)
	for _, o := range rs.outs {
		out := d.byNum[o.Port]
		if out == nil {
			d.frames.put(o.Frame)
			if d.counters.noPort.Add(1) == 1 {
				d.log.Warn("the model sent a packet to a port with no interface (counted in no_port_drops)", "port", o.Port)
			}
			continue
		}
		if !out.q.push(o.Frame) {
			out.st.TailDrops.Add(1)
			d.frames.put(o.Frame)
			continue
		}
		if !slices.Contains(rs.fed, out) {
			rs.fed = append(rs.fed, out)
		}
	}
}

// write drains the port's egress queue: every frame waiting goes into the TX ring, then one
// system call sends them all. A rate-limited port sends each frame when its shaper allows.
func (d *dataplane) write(ctx context.Context, p *port) {
	var hold <-chan time.Time
	batch := make([][]byte, 0, p.q.capacity())
	for {
		select {
		case <-ctx.Done():
			return
		case <-hold:
			hold = nil
			if f := p.faults.flush(); f != nil {
				d.transmit(p, f)
				d.frames.put(f)
				d.flush(p)
			}
			continue
		case <-p.q.wake:
		}
		batch = p.q.popAll(batch[:0])
		for _, f := range batch {
			if p.shaper != nil {
				p.shaper.wait(len(f))
			}
			d.emit(p, f)
			p.q.depth.Add(-1)
			if p.shaper != nil {
				d.flush(p)
			}
		}
		d.flush(p)
		if p.faults != nil && p.faults.held != nil && hold == nil {
			hold = time.After(reorderHold)
		}
	}
}

// emit transmits f with the port's faults and recycles what is done with.
func (d *dataplane) emit(p *port, f []byte) {
	if p.faults == nil {
		d.transmit(p, f)
		d.frames.put(f)
		return
	}
	if p.live != nil {
		p.faults.follow(p.live, p.num)
	}
	out, n := p.faults.apply(f)
	for _, g := range out[:n] {
		d.transmit(p, g)
	}
	if p.faults.held == nil || &p.faults.held[0] != &f[0] {
		d.frames.put(f) // sent (once or twice) or lost
	}
	for _, g := range out[:n] {
		if &g[0] != &f[0] {
			d.frames.put(g) // the previously held frame, sent after f
		}
	}
}

func (d *dataplane) transmit(p *port, f []byte) {
	if len(f) < 14 {
		p.st.TxErrors.Add(1)
		return
	}
	if err := p.sock.Queue(f); err != nil {
		if n := p.st.TxErrors.Add(1); n&(n-1) == 0 {
			d.log.Warn("port write failed", "port", p.num, "interface", p.ifname, "errors", n, "err", err)
		}
		return
	}
	p.st.TxPackets.Add(1)
	p.st.TxBytes.Add(uint64(len(f)))
}

func (d *dataplane) flush(p *port) {
	if err := p.sock.Flush(); err != nil && !errors.Is(err, afring.ErrClosed) {
		if n := p.st.TxErrors.Add(1); n&(n-1) == 0 {
			d.log.Warn("port send failed", "port", p.num, "interface", p.ifname, "errors", n, "err", err)
		}
	}
}
