package afring

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Config sizes a socket's rings. Zero values take the defaults.
type Config struct {
	// Protocol is the EtherType received (unix.ETH_P_ALL for every frame, unix.ETH_P_IP for IPv4).
	Protocol uint16
	// FrameSize is the ring slot size in bytes, a power of two from 512 to 65536 (default 2048).
	// A slot holds an 80-byte header and the frame: larger frames are truncated on receive (and
	// counted, see Stats.Truncated) and refused on transmit.
	FrameSize int
	// RXFrames and TXFrames are the number of slots of each ring (defaults 1024 and 256). The
	// receive ring is what absorbs a burst while the reader is descheduled.
	RXFrames, TXFrames int
	// Promiscuous receives frames addressed to any MAC.
	Promiscuous bool
	// Blocking waits in ppoll(2) on the calling thread instead of parking the goroutine in Go's
	// network poller (see BenchmarkIO for which is faster where).
	Blocking bool
	// Filter is a classic BPF program run by the kernel on every frame before it is copied into
	// the receive ring (SO_ATTACH_FILTER): a frame it returns 0 for is never seen, and costs
	// neither a copy nor a wake-up. nil receives every frame.
	Filter []unix.SockFilter
}

// DefaultConfig's values.
const (
	DefaultFrameSize = 2048
	DefaultRXFrames  = 1024
	DefaultTXFrames  = 256
)

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("afring: socket closed")

// ErrTooLarge is returned by Queue for a frame that does not fit a ring slot.
var ErrTooLarge = errors.New("afring: frame larger than a ring slot")

// Socket is an AF_PACKET socket bound to one interface, with an RX and a TX ring. Receive is used
// by one goroutine at a time, and Queue/Flush by one (possibly another) goroutine at a time; Stats
// and Close may be called from anywhere.
type Socket struct {
	fd, wake  int             // the socket; an eventfd that Close writes to end a blocked Receive
	file      *os.File        // fd registered with Go's network poller (nil when Blocking)
	raw       syscall.RawConn // file's, for waiting on the rings
	rxWait    *pollWait       // used under rxMu
	txWait    *pollWait       // used under txMu
	ifi       *net.Interface
	mem       []byte
	frameSize int
	rx, tx    []byte // the two rings inside mem
	rxN, txN  int
	rxHead    int // next RX slot to read
	txHead    int // next TX slot to fill
	txPending int // slots filled since the last Flush
	scratch   []byte
	closed    atomic.Bool
	rxMu      sync.Mutex // held by Receive, so Close can wait for it
	txMu      sync.Mutex
	statsMu   sync.Mutex
	st        counters
	kdrops    uint64 // accumulated PACKET_STATISTICS drops (the kernel resets them on read)
}

// slot header offsets and sizes (TPACKET_V2).
const (
	hdrLen  = unix.SizeofTpacket2Hdr // 32, already TPACKET_ALIGNMENT-aligned
	txOff   = hdrLen                 // a TX frame's data follows the header (no PACKET_TX_HAS_OFF)
	minSlot = 512
	maxSlot = 65536
)

// Open binds a socket with rings to the named interface (needs CAP_NET_RAW). Frames the host
// sends on the interface (this socket's and others') are not received.
func Open(ifname string, cfg Config) (*Socket, error) {
	if cfg.FrameSize == 0 {
		cfg.FrameSize = DefaultFrameSize
	}
	if cfg.RXFrames == 0 {
		cfg.RXFrames = DefaultRXFrames
	}
	if cfg.TXFrames == 0 {
		cfg.TXFrames = DefaultTXFrames
	}
	if cfg.Protocol == 0 {
		cfg.Protocol = unix.ETH_P_ALL
	}
	if cfg.FrameSize < minSlot || cfg.FrameSize > maxSlot || cfg.FrameSize&(cfg.FrameSize-1) != 0 {
		return nil, fmt.Errorf("afring: frame size %d is not a power of two in %d..%d", cfg.FrameSize, minSlot, maxSlot)
	}
	if cfg.RXFrames < 1 || cfg.TXFrames < 1 {
		return nil, fmt.Errorf("afring: ring sizes %d/%d must be positive", cfg.RXFrames, cfg.TXFrames)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("afring: interface %q: %w", ifname, err)
	}
	// Protocol 0 receives nothing until bind, so no other interface's frames reach the ring.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("afring: AF_PACKET socket (needs root or CAP_NET_RAW): %w", err)
	}
	s := &Socket{fd: fd, wake: -1, ifi: ifi, frameSize: cfg.FrameSize, rxN: cfg.RXFrames, txN: cfg.TXFrames,
		scratch: make([]byte, cfg.FrameSize+4)}
	if err := s.setup(cfg); err != nil {
		s.release()
		return nil, fmt.Errorf("afring: %s: %w", ifname, err)
	}
	return s, nil
}

func (s *Socket) setup(cfg Config) error {
	var err error
	if err = unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("PACKET_VERSION V2: %w", err)
	}
	// A frame the device refuses is dropped from the TX ring instead of stalling it.
	if err = unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_LOSS, 1); err != nil {
		return fmt.Errorf("PACKET_LOSS: %w", err)
	}
	if err = unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fmt.Errorf("PACKET_IGNORE_OUTGOING (kernel 4.20 or later): %w", err)
	}
	block := max(cfg.FrameSize, unix.Getpagesize())
	per := block / cfg.FrameSize
	for _, r := range []struct {
		opt int
		n   *int
	}{{unix.PACKET_RX_RING, &s.rxN}, {unix.PACKET_TX_RING, &s.txN}} {
		*r.n = (*r.n + per - 1) / per * per // whole blocks
		req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(*r.n / per), Frame_size: uint32(cfg.FrameSize), Frame_nr: uint32(*r.n)}
		if err = unix.SetsockoptTpacketReq(s.fd, unix.SOL_PACKET, r.opt, &req); err != nil {
			return fmt.Errorf("ring of %d x %d bytes: %w", *r.n, cfg.FrameSize, err)
		}
	}
	rxBytes, txBytes := s.rxN*cfg.FrameSize, s.txN*cfg.FrameSize
	if s.mem, err = unix.Mmap(s.fd, 0, rxBytes+txBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap of the rings: %w", err)
	}
	s.rx, s.tx = s.mem[:rxBytes], s.mem[rxBytes:]
	if cfg.Promiscuous {
		mreq := unix.PacketMreq{Ifindex: int32(s.ifi.Index), Type: unix.PACKET_MR_PROMISC}
		if err = unix.SetsockoptPacketMreq(s.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	if len(cfg.Filter) > 0 {
		prog := unix.SockFprog{Len: uint16(len(cfg.Filter)), Filter: &cfg.Filter[0]}
		if err = unix.SetsockoptSockFprog(s.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			return fmt.Errorf("receive filter: %w", err)
		}
	}
	if s.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	if err = unix.Bind(s.fd, &unix.SockaddrLinklayer{Protocol: htons(cfg.Protocol), Ifindex: s.ifi.Index}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if !cfg.Blocking {
		if err = unix.SetNonblock(s.fd, true); err != nil {
			return err
		}
		// A non-blocking descriptor handed to os.NewFile is registered with the runtime's poller.
		s.file = os.NewFile(uintptr(s.fd), "afring:"+s.ifi.Name)
		if s.raw, err = s.file.SyscallConn(); err != nil {
			return err
		}
		s.rxWait, s.txWait = newPollWait(s, unix.POLLIN), newPollWait(s, unix.POLLOUT)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Interface is the interface the socket is bound to.
func (s *Socket) Interface() *net.Interface { return s.ifi }

// Blocking reports whether the socket waits in ppoll(2) (Config.Blocking), not in Go's poller.
func (s *Socket) Blocking() bool { return s.file == nil }

// MaxFrame is the largest frame the rings carry whole: the kernel puts a received frame's
// Ethernet header at 66 bytes into its slot (a 52-byte header, then the network header 16-aligned).
func (s *Socket) MaxFrame() int { return s.frameSize - 80 }

// Close releases the socket; a Receive blocked in another goroutine returns ErrClosed.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	_, _ = unix.Write(s.wake, one[:])
	if s.file != nil {
		_ = s.file.SetDeadline(time.Unix(1, 0)) // wakes a goroutine parked in the poller
	}
	s.rxMu.Lock() // wait for a running Receive and Queue/Flush to leave the rings
	s.txMu.Lock()
	s.statsMu.Lock()
	defer s.rxMu.Unlock()
	defer s.txMu.Unlock()
	defer s.statsMu.Unlock()
	s.release()
	return nil
}

func (s *Socket) release() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem, s.rx, s.tx = nil, nil, nil
	}
	if s.wake >= 0 {
		unix.Close(s.wake)
	}
	if s.file != nil {
		s.file.Close()
		return
	}
	unix.Close(s.fd)
}

func (s *Socket) hdr(ring []byte, i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&ring[i*s.frameSize]))
}

func status(h *unix.Tpacket2Hdr) uint32 { return atomic.LoadUint32(&h.Status) }
