package refswitch

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antoninbas/p4runtime-go-client/pkg/client"

	"github.com/inapack/inapack/internal/afring"
	"github.com/inapack/inapack/p4src/wire"
)

// ipv4Frame is a minimum-size UDP/IPv4 frame (not INA) to dst.
func ipv4Frame(dst net.IP) []byte {
	f := dataFrame(1, 0, 0, 0)[:64]
	f[16], f[17] = 0, 50 // IPv4 total length
	copy(f[30:34], dst.To4())
	f[36], f[37] = 0x13, 0x88 // UDP port 5000: not INA
	f[38], f[39] = 0, 30
	f[24], f[25] = 0, 0 // a valid header checksum: the switch does not route a bad one
	binary.BigEndian.PutUint16(f[24:], wire.IPv4Checksum(f[14:34]))
	return f
}

// window is the number of frames each sender keeps in flight: a closed loop measures what the
// switch forwards rather than what the kernel drops when senders outrun it.
const window = 64

// BenchmarkForwardVeth measures the packets per second the switch (running in this process)
// forwards between veths with ipv4_lpm: one port hairpinning, and four ports each sending to the
// next. Each host side keeps `window` frames in flight through AF_PACKET rings; a frame not back
// within 50 ms is counted lost and its credit returned. With -benchmem, allocs/op is the switch's
// and the hosts' allocations per packet forwarded: 0.
func BenchmarkForwardVeth(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("ports=%d", n), func(b *testing.B) {
			swIf, hostIf := makeVeths(b, fmt.Sprintf("rsb%d", n), n)
			cl, _ := runSwitch(b, Config{}, swIf)
			hosts := make([]*afring.Socket, n)
			credits := make([]chan struct{}, n) // credits[i]: frames host i may still send
			for i := range n {
				h, err := afring.Open(hostIf[i], afring.Config{Promiscuous: true})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				hosts[i] = h
				credits[i] = make(chan struct{}, window)
				for range window {
					credits[i] <- struct{}{}
				}
				if err := cl.InsertTableEntry(context.Background(), cl.NewTableEntry(tIPv4, map[string]client.MatchInterface{
					"hdr.ipv4.dst_addr": &client.LpmMatch{Value: []byte{10, 0, byte(i), 0}, PLen: 24}},
					cl.NewTableActionDirect(aFwd, [][]byte{{2, 0, 0, 0, 0, byte(i)}, u16(uint16(i))}), nil)); err != nil {
					b.Fatal(err)
				}
			}
			var got, lost atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for j, h := range hosts {
				from := (j - 1 + n) % n // host j receives what host j-1 sends
				wg.Add(1)
				count := func([]byte) {
					got.Add(1)
					select {
					case credits[from] <- struct{}{}:
					default:
					}
				}
				go func() {
					defer wg.Done()
					for {
						_, _ = h.Receive(20*time.Millisecond, 0, count)
						select {
						case <-stop:
							return
						default:
						}
					}
				}()
			}
			per := b.N/n + 1
			b.ResetTimer()
			start := time.Now()
			var send sync.WaitGroup
			for i, h := range hosts {
				send.Add(1)
				go func() {
					defer send.Done()
					f := ipv4Frame(net.IP{10, 0, byte((i + 1) % n), 1})
					lossTimer := time.NewTimer(time.Hour)
					for range per {
						select {
						case <-credits[i]:
						default: // no credit at hand: wait for one, at most 50 ms
							lossTimer.Reset(50 * time.Millisecond)
							select {
							case <-credits[i]:
							case <-lossTimer.C:
								lost.Add(1)
							}
							lossTimer.Stop()
						}
						_ = h.Send(f)
					}
				}()
			}
			send.Wait()
			for deadline := time.Now().Add(time.Second); got.Load() < int64(per*n) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(got.Load())/elapsed.Seconds(), "pkts/s")
			b.ReportMetric(100*float64(int64(per*n)-got.Load())/float64(per*n), "loss%")
		})
	}
}
