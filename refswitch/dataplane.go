package refswitch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/inapack/inapack/p4src/model"
)

// maxFrame is the largest frame a port reads (the veth MTU used with BMv2 is 9500).
const maxFrame = 9600

// reorderHold is how long a packet picked for reordering waits for a later one to overtake it.
const reorderHold = 2 * time.Millisecond

// port is one switch port on a Linux interface.
type port struct {
	num    uint16
	ifname string
	conn   *packet.Conn
	queue  chan []byte // bounded egress queue; its length is enq_qdepth
	shaper *shaper     // nil: no rate limit
	faults *injector   // nil: no faults
	st     portCounters
}

// dataplane connects the model to its ports.
type dataplane struct {
	sw         *model.Switch
	log        *slog.Logger
	ports      map[uint16]*port
	configured atomic.Bool
	counters   switchCounters
	wg         sync.WaitGroup
}

// openPort binds an AF_PACKET socket to an interface, promiscuous, not seeing its own transmissions.
func openPort(spec PortSpec, queueLen int) (*port, error) {
	ifi, err := net.InterfaceByName(spec.Ifname)
	if err != nil {
		return nil, fmt.Errorf("port %d: interface %q: %w", spec.Port, spec.Ifname, err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
	if err != nil {
		return nil, fmt.Errorf("port %d: AF_PACKET socket on %s (needs root or CAP_NET_RAW): %w", spec.Port, spec.Ifname, err)
	}
	if err := conn.SetPromiscuous(true); err != nil {
		conn.Close()
		return nil, fmt.Errorf("port %d: promiscuous mode on %s: %w", spec.Port, spec.Ifname, err)
	}
	rc, err := conn.SyscallConn()
	if err == nil {
		var serr error
		err = rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1) })
		if err == nil {
			err = serr
		}
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("port %d: PACKET_IGNORE_OUTGOING on %s: %w", spec.Port, spec.Ifname, err)
	}
	return &port{num: spec.Port, ifname: spec.Ifname, conn: conn, queue: make(chan []byte, queueLen)}, nil
}

// start runs a reader and a writer per port until ctx ends.
func (d *dataplane) start(ctx context.Context) {
	d.sw.QueueDepth = func(p uint16) uint32 {
		if pt := d.ports[p]; pt != nil {
			return uint32(len(pt.queue))
		}
		return 0
	}
	for _, p := range d.ports {
		d.wg.Add(2)
		go func() { defer d.wg.Done(); d.read(ctx, p) }()
		go func() { defer d.wg.Done(); d.write(ctx, p) }()
	}
	go func() {
		<-ctx.Done()
		for _, p := range d.ports {
			p.conn.Close() // unblocks the readers
		}
	}()
}

func (d *dataplane) read(ctx context.Context, p *port) {
	buf := make([]byte, maxFrame)
	for {
		n, _, err := p.conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if n := p.st.RxErrors.Add(1); n&(n-1) == 0 { // log the 1st, 2nd, 4th, ... error
				d.log.Warn("port read failed", "port", p.num, "interface", p.ifname, "errors", n, "err", err)
			}
			time.Sleep(10 * time.Millisecond) // do not spin on a persistent error
			continue
		}
		p.st.RxPackets.Add(1)
		p.st.RxBytes.Add(uint64(n))
		d.process(p.num, buf[:n])
	}
}

// process runs one frame through the model and queues what leaves. The model neither keeps nor
// changes frame, so the reader reuses its buffer.
func (d *dataplane) process(in uint16, frame []byte) {
	if !d.configured.Load() {
		d.counters.noPipeline.Add(1)
		return
	}
	for _, o := range d.sw.Process(in, frame) {
		out := d.ports[o.Port]
		if out == nil {
			if d.counters.noPort.Add(1) == 1 {
				d.log.Warn("the model sent a packet to a port with no interface (counted in no_port_drops)", "port", o.Port)
			}
			continue
		}
		select {
		case out.queue <- o.Frame:
		default:
			out.st.TailDrops.Add(1)
		}
	}
}

func (d *dataplane) write(ctx context.Context, p *port) {
	var hold <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-hold:
			hold = nil
			if f := p.faults.flush(); f != nil {
				d.send(p, f)
			}
		case f := <-p.queue:
			if p.shaper != nil {
				p.shaper.wait(len(f))
			}
			if p.faults == nil {
				d.send(p, f)
				continue
			}
			for _, g := range p.faults.apply(f) {
				d.send(p, g)
			}
			if p.faults.held != nil && hold == nil {
				hold = time.After(reorderHold)
			}
		}
	}
}

func (d *dataplane) send(p *port, f []byte) {
	if len(f) < 14 {
		p.st.TxErrors.Add(1)
		return
	}
	if _, err := p.conn.WriteTo(f, &packet.Addr{HardwareAddr: net.HardwareAddr(f[0:6])}); err != nil {
		if n := p.st.TxErrors.Add(1); n&(n-1) == 0 {
			d.log.Warn("port write failed", "port", p.num, "interface", p.ifname, "errors", n, "err", err)
		}
		return
	}
	p.st.TxPackets.Add(1)
	p.st.TxBytes.Add(uint64(len(f)))
}
