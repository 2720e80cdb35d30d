package transport

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/inapack/inapack/internal/afring"
	"golang.org/x/sys/unix"
)

// Packet is an AF_PACKET socket on one interface, receiving IPv4 frames, with PACKET_MMAP rings
// for both directions: frames are read in place from the receive ring and queued into the
// transmit ring, which one system call sends in a batch.
type Packet struct {
	s *afring.Socket
}

// PacketStats are a Packet transport's counters; KernelDrops counts the frames the kernel dropped
// because the receive ring was full.
type PacketStats = afring.Stats

// PacketConfig sizes the rings (zero values: 1024 receive and 256 transmit slots of 2 KiB) and
// says which jobs' frames to receive.
type PacketConfig struct {
	RXFrames, TXFrames int
	// Jobs, when set, keeps the INA frames of other jobs out of the receive ring: the kernel
	// drops them before they are copied (JobFilter). On a host where several agents listen on one
	// interface, each would otherwise copy and wake up for every other agent's frames. IPv4
	// frames that are not INA packets are received as before.
	Jobs []uint16
	// Lane of Lanes (with Jobs; Lanes 0 or 1: all) keeps only the jobs' INA frames whose seq is
	// Lane mod Lanes: thread Lane's socket of a worker.Group (LaneFilter).
	Lane, Lanes int
	// Blocking waits for frames in ppoll(2) on the receiving goroutine's thread instead of Go's
	// network poller (afring.Config.Blocking); WaitBlocking says when a process may.
	Blocking bool
}

// WaitBlocking reports whether a process whose receivers (sockets, each read by a goroutine of
// its own) wait in ppoll(2) still leaves one of the cores Go may use (GOMAXPROCS) to its other
// goroutines: a goroutine in ppoll keeps its core until the runtime's monitor takes it back, up to
// 10 ms later in a quiet process. Where it does, an agent waits better blocking: the network
// poller's epoll also wakes for every transmitted frame the kernel frees (its socket's write
// space), and hands each arrival from the poller's thread to the goroutine's. Measured with
// ina-worker and ina-ps (one socket each) in make bench's 4-worker job through the reference
// switch: the workers' CPU 0.92 times the poller's (12 alternating pairs, lower in all), the
// goodput 1.02 to 1.11 times by the median of two runs (docs/agents.md). The reference switch,
// with a reader per port and writers beside them, stays on the poller: blocking readers gave it
// 0.85 times the goodput.
func WaitBlocking(sockets int) bool { return sockets < runtime.GOMAXPROCS(0) }

// OpenPacket opens a raw socket on the named interface (needs CAP_NET_RAW). Frames the host sends
// itself are not looped back to Recv. The interface is put in promiscuous mode so frames addressed
// to other MACs (the INA protocol does not require the receiver's MAC) are seen. An 802.1Q tag the
// kernel stripped on receive is put back, so a tagged frame is never mistaken for an INA packet.
func OpenPacket(name string) (*Packet, error) { return OpenPacketConfig(name, PacketConfig{}) }

// OpenPacketConfig is OpenPacket with ring sizes.
func OpenPacketConfig(name string, cfg PacketConfig) (*Packet, error) {
	// Bound to every protocol, the socket sees a frame before the interface's ingress hooks
	// (one bound to IPv4 sees it after them, beside the IP stack), so an emulated host can drop
	// its frames there and spare its kernel an IP stack that has nothing to do with them
	// (internal/ipdrop); the filter keeps what a socket bound to IPv4 would receive.
	ac := afring.Config{Protocol: unix.ETH_P_ALL, Promiscuous: true, RXFrames: cfg.RXFrames, TXFrames: cfg.TXFrames, Blocking: cfg.Blocking}
	prog, err := IPv4Filter()
	if len(cfg.Jobs) > 0 {
		prog, err = LaneFilter(cfg.Jobs, cfg.Lane, max(cfg.Lanes, 1))
	}
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	for _, in := range prog {
		ac.Filter = append(ac.Filter, unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K})
	}
	s, err := afring.Open(name, ac)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	return &Packet{s: s}, nil
}

// MAC is the interface's hardware address.
func (p *Packet) MAC() net.HardwareAddr { return p.s.Interface().HardwareAddr }

// Send implements Transport. The frame goes out as is (its Ethernet header included).
func (p *Packet) Send(frame []byte) error { return mapErr(p.s.Send(frame)) }

// Queue implements Batcher: frame is copied into the transmit ring and sent by the next Flush.
func (p *Packet) Queue(frame []byte) error { return mapErr(p.s.Queue(frame)) }

// Flush implements Batcher.
func (p *Packet) Flush() error { return mapErr(p.s.Flush()) }

// Recv implements Transport.
func (p *Packet) Recv(buf []byte, deadline time.Time) (int, error) {
	n := 0
	_, err := p.RecvBatch(deadline, 1, func(f []byte) { n = copy(buf, f) })
	if err == nil && n == 0 {
		return 0, ErrTimeout
	}
	return n, err
}

// RecvBatch implements BatchReceiver.
func (p *Packet) RecvBatch(deadline time.Time, limit int, fn func(frame []byte)) (int, error) {
	timeout := time.Duration(-1)
	if !deadline.IsZero() {
		timeout = max(0, time.Until(deadline))
	}
	k, err := p.s.Receive(timeout, limit, fn)
	if err != nil {
		return 0, mapErr(err)
	}
	if k == 0 {
		return 0, ErrTimeout
	}
	return k, nil
}

// Stats returns the socket's counters, the kernel's drops included.
func (p *Packet) Stats() PacketStats { return p.s.Stats() }

// Close implements Transport.
func (p *Packet) Close() error { return p.s.Close() }

func mapErr(err error) error {
	if errors.Is(err, afring.ErrClosed) {
		return ErrClosed
	}
	return err
}
