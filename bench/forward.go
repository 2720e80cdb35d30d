package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/p4src/wire"
)

type forwardOpts struct {
	bin, bmv2, bmv2JSON, prefix, only string
	duration                          time.Duration
	window                            int
}

// forwarder runs a switch on the switch-side veths until stop is called.
type forwarder struct {
	name  string
	start func(ctx context.Context, sw []string) (stop func(), err error)
}

func forward(o forwardOpts) error {
	if o.duration == 0 {
		o.duration = 3 * time.Second
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	const maxPorts = 4
	sw, host, cleanup, err := makeVeths(o.prefix, maxPorts)
	defer cleanup()
	if err != nil {
		return err
	}
	fws := []forwarder{{"ring", startRing}, {"ref", o.startRef}}
	if bin, json, why := o.findBMv2(); why != "" {
		fmt.Printf("SKIP: forward bmv2: %s\n", why)
	} else {
		fws = append(fws, forwarder{"bmv2", o.bmv2Starter(bin, json)})
	}
	for _, n := range []int{1, maxPorts} {
		for _, fw := range fws {
			if o.only != "" && fw.name != o.only {
				continue
			}
			stop, err := fw.start(ctx, sw[:n])
			if err != nil {
				return fmt.Errorf("%s: %w", fw.name, err)
			}
			rate, loss, err := measure(ctx, host[:n], o.window, o.duration)
			stop()
			if err != nil {
				return fmt.Errorf("%s, %d ports: %w", fw.name, n, err)
			}
			fmt.Printf("forward: switch=%s ports=%d pkts_per_s=%.0f loss_pct=%.3f\n", fw.name, n, rate, loss)
		}
	}
	return nil
}

// makeVeths creates n veth pairs <prefix>s<i> (switch side) / <prefix>h<i> (host side).
func makeVeths(prefix string, n int) (sw, host []string, cleanup func(), err error) {
	var made []string
	cleanup = func() {
		for _, l := range made {
			_ = exec.Command("ip", "link", "del", l).Run()
		}
	}
	for i := range n {
		s, h := fmt.Sprintf("%ss%d", prefix, i), fmt.Sprintf("%sh%d", prefix, i)
		if out, err := exec.Command("ip", "link", "add", s, "type", "veth", "peer", "name", h).CombinedOutput(); err != nil {
			return nil, nil, cleanup, fmt.Errorf("ip link add %s: %v: %s", s, err, out)
		}
		made = append(made, s)
		for _, l := range []string{s, h} {
			_ = exec.Command("sysctl", "-qw", "net.ipv6.conf."+l+".disable_ipv6=1").Run()
			if out, err := exec.Command("ip", "link", "set", l, "mtu", "9500", "up").CombinedOutput(); err != nil {
				return nil, nil, cleanup, fmt.Errorf("ip link set %s up: %v: %s", l, err, out)
			}
		}
		sw, host = append(sw, s), append(host, h)
	}
	return sw, host, cleanup, nil
}

// next is the port host i sends to: itself with one port, the next one otherwise.
func next(i, n int) int { return (i + 1) % n }

// hostMAC and route: port i's host has MAC 02:00:00:00:01:0i and subnet 10.0.i.0/24.
func hostMAC(i int) []byte { return []byte{2, 0, 0, 0, 1, byte(i)} }

// frame is the 64-byte UDP/IPv4 frame host i sends (not INA: port 5000).
func frame(i, n int) []byte {
	f := wire.Frame{Addr: wire.Addr{SrcMAC: hostMAC(i), DstMAC: []byte{2, 0, 0, 0, 0, 0xfe},
		SrcIP: []byte{10, 0, byte(i), 1}, DstIP: []byte{10, 0, byte(next(i, n)), 1}}, TTL: 64, SrcPort: 5000}
	b := f.Marshal()[:64]
	binary.BigEndian.PutUint16(b[16:], 50) // IPv4 total length
	binary.BigEndian.PutUint16(b[36:], 5000)
	binary.BigEndian.PutUint16(b[38:], 30)
	binary.BigEndian.PutUint16(b[24:], 0)
	binary.BigEndian.PutUint16(b[24:], wire.IPv4Checksum(b[14:34]))
	return b
}

// measure runs the closed-loop senders on the host veths for d after a warm-up and returns the
// frames delivered per second and the percentage never delivered.
func measure(ctx context.Context, host []string, window int, d time.Duration) (rate, lossPct float64, err error) {
	n := len(host)
	socks := make([]*afring.Socket, n)
	for i, h := range host {
		if socks[i], err = afring.Open(h, afring.Config{Promiscuous: true, RXFrames: 4096, TXFrames: 512}); err != nil {
			return 0, 0, err
		}
		defer socks[i].Close()
	}
	// Warm-up: a fresh veth drops frames until its qdisc is attached, and the switch must be
	// programmed: wait until every host's frame comes back.
	for i := range n {
		f := frame(i, n)
		ok := false
		for try := 0; try < 100 && !ok && ctx.Err() == nil; try++ {
			if err := socks[i].Send(f); err != nil {
				return 0, 0, err
			}
			_, _ = socks[next(i, n)].Receive(50*time.Millisecond, 0, func(b []byte) { ok = ok || len(b) >= 64 && b[28] == byte(i) })
		}
		if !ok {
			return 0, 0, fmt.Errorf("nothing came through from port %d in 5s", i)
		}
	}
	for i := range n { // drain
		_, _ = socks[i].Receive(10*time.Millisecond, 0, func([]byte) {})
	}
	var sent, got atomic.Int64
	credits := make([]chan int, n)
	for i := range credits {
		credits[i] = make(chan int, 4096)
	}
	var counting atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for j := range n {
		from := (j - 1 + n) % n // host j receives what host j-1 sends
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				k, err := socks[j].Receive(5*time.Millisecond, 0, func([]byte) {})
				if k > 0 {
					if counting.Load() {
						got.Add(int64(k))
					}
					credits[from] <- k
				}
				select {
				case <-stop:
					return
				default:
				}
				if err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			f := frame(j, n)
			inflight := 0
			for {
				for ; inflight < window; inflight++ {
					_ = socks[j].Queue(f)
					if counting.Load() {
						sent.Add(1)
					}
				}
				_ = socks[j].Flush()
				select {
				case <-stop:
					return
				case k := <-credits[j]:
					inflight -= k
				case <-time.After(20 * time.Millisecond):
					inflight = 0 // lost frames return their credit
				}
			}
		}()
	}
	time.Sleep(d / 4) // warm-up
	counting.Store(true)
	start := time.Now()
	time.Sleep(d)
	counting.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	s, g := sent.Load(), got.Load()
	if s == 0 {
		return 0, 0, fmt.Errorf("nothing sent")
	}
	return float64(g) / elapsed.Seconds(), 100 * max(0, float64(s-g)) / float64(s), nil
}
