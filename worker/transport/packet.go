package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// Packet is an AF_PACKET raw socket on one interface, receiving IPv4 frames.
type Packet struct {
	conn *packet.Conn
	ifi  *net.Interface
	dst  *packet.Addr
}

// OpenPacket opens a raw socket on the named interface (needs CAP_NET_RAW). Frames the host sends
// itself are not looped back to Recv. The interface is put in promiscuous mode so frames addressed
// to other MACs (the INA protocol does not require the receiver's MAC) are seen.
func OpenPacket(name string) (*Packet, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("transport: interface %q: %w", name, err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_IP, nil)
	if err != nil {
		return nil, fmt.Errorf("transport: AF_PACKET socket on %s (needs root or CAP_NET_RAW): %w", name, err)
	}
	if rc, err := c.SyscallConn(); err == nil {
		// Best effort: kernels before 4.20 lack PACKET_IGNORE_OUTGOING; agents then skip their own
		// frames by type.
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		})
	}
	if err := c.SetPromiscuous(true); err != nil {
		c.Close()
		return nil, fmt.Errorf("transport: promiscuous mode on %s: %w", name, err)
	}
	return &Packet{conn: c, ifi: ifi, dst: &packet.Addr{HardwareAddr: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}}, nil
}

// MAC is the interface's hardware address.
func (p *Packet) MAC() net.HardwareAddr { return p.ifi.HardwareAddr }

// Send implements Transport. The frame goes out as is (its Ethernet header included).
func (p *Packet) Send(frame []byte) error {
	_, err := p.conn.WriteTo(frame, p.dst)
	if errors.Is(err, net.ErrClosed) {
		return ErrClosed
	}
	return err
}

// Recv implements Transport.
func (p *Packet) Recv(buf []byte, deadline time.Time) (int, error) {
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	n, _, err := p.conn.ReadFrom(buf)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, ErrTimeout
	case errors.Is(err, net.ErrClosed):
		return 0, ErrClosed
	}
	return 0, err
}

// Close implements Transport.
func (p *Packet) Close() error { return p.conn.Close() }
