package afring

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// endpoint is one way of moving frames over AF_PACKET, for the comparison below.
type endpoint struct {
	send  func([]byte)  // queue or send one frame
	flush func()        // after a batch of sends
	recv  func(int) int // receive what is waiting (blocking up to 1 ms), return how many
	close func()
}

func ringEndpoint(b *testing.B, name string, blocking bool) endpoint {
	s := open(b, name, Config{Blocking: blocking})
	return endpoint{
		send:  func(f []byte) { _ = s.Queue(f) },
		flush: func() { _ = s.Flush() },
		recv: func(int) int {
			n, _ := s.Receive(time.Millisecond, 0, func([]byte) {})
			return n
		},
		close: func() { s.Close() },
	}
}

// packetEndpoint is github.com/mdlayher/packet: one sendto and one recvfrom per frame.
func packetEndpoint(b *testing.B, name string) endpoint {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		b.Fatal(err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = c.SetPromiscuous(true)
	dst := &packet.Addr{HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	buf := make([]byte, 2048)
	return endpoint{
		send:  func(f []byte) { _, _ = c.WriteTo(f, dst) },
		flush: func() {},
		recv: func(int) int {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, _, err := c.ReadFrom(buf); err != nil {
				return 0
			}
			return 1
		},
		close: func() { c.Close() },
	}
}

// gopacketEndpoint is github.com/gopacket/gopacket/afpacket: an RX ring (V2 or V3) and one
// write per frame sent.
func gopacketEndpoint(b *testing.B, name string, v afpacket.OptTPacketVersion) endpoint {
	h, err := afpacket.NewTPacket(afpacket.OptInterface(name), v, afpacket.OptFrameSize(2048),
		afpacket.OptBlockSize(1<<20), afpacket.OptNumBlocks(2), afpacket.OptPollTimeout(time.Millisecond),
		afpacket.OptBlockTimeout(time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	_ = h.SetPromiscuous(true)
	return endpoint{
		send:  func(f []byte) { _ = h.WritePacketData(f) },
		flush: func() {},
		recv: func(max int) int {
			n := 0
			for n < max {
				if _, _, err := h.ZeroCopyReadPacketData(); err != nil {
					break
				}
				n++
			}
			return n
		},
		close: h.Close,
	}
}

// BenchmarkIO compares ways of moving 314-byte frames (an INA packet) one way across a veth pair,
// with 64 frames in flight, sender and receiver in this process: this package's rings, gopacket's
// afpacket (RX ring, one write per frame sent) and mdlayher/packet (one system call per frame).
// pkts/s is what crossed; ns/op is the wall time per frame for both sides together.
func BenchmarkIO(b *testing.B) {
	an, bn := vethPair(b, "b")
	for _, c := range []struct {
		name string
		open func(*testing.B, string) endpoint
	}{
		{"afring", func(b *testing.B, n string) endpoint { return ringEndpoint(b, n, false) }},
		{"afring-blocking", func(b *testing.B, n string) endpoint { return ringEndpoint(b, n, true) }},
		{"gopacket-v3", func(b *testing.B, n string) endpoint { return gopacketEndpoint(b, n, afpacket.TPacketVersion3) }},
		{"gopacket-v2", func(b *testing.B, n string) endpoint { return gopacketEndpoint(b, n, afpacket.TPacketVersion2) }},
		{"mdlayher-packet", packetEndpoint},
	} {
		b.Run(c.name, func(b *testing.B) {
			tx, rx := c.open(b, an), c.open(b, bn)
			defer tx.close()
			defer rx.close()
			const window = 64
			credits := make(chan int, 1024)
			f := testFrame(314, 1)
			for try := 0; try < 100; try++ { // wait for the link
				tx.send(f)
				tx.flush()
				if rx.recv(1) > 0 {
					break
				}
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var got int
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := rx.recv(window)
					got += n
					if n > 0 {
						credits <- n
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
			b.ResetTimer()
			start := time.Now()
			inflight := 0
			for sent := 0; sent < b.N; {
				for inflight < window && sent < b.N {
					tx.send(f)
					inflight++
					sent++
				}
				tx.flush()
				select {
				case n := <-credits:
					inflight -= n
				case <-time.After(5 * time.Millisecond):
					inflight = 0 // lost frames: their credit is returned
				}
			}
			for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
				select {
				case <-credits:
				case <-time.After(5 * time.Millisecond):
				}
			}
			elapsed := time.Since(start)
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(got)/elapsed.Seconds(), "pkts/s")
			b.ReportMetric(100*float64(b.N-got)/float64(b.N), "loss%")
		})
	}
}
