package e2e

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
)

// Impairment is what a link does to frames, as probabilities per frame. Corrupt is per INA frame:
// one bit of one value lane flipped, as the reference switch's --corrupt does (nothing below the
// INA layer notices: the UDP checksum is zero).
type Impairment struct {
	Loss, Dup, Reorder, Corrupt float64
	// MaxDelay is how long a reordered frame is held back (default 2ms).
	MaxDelay time.Duration
}

// Fabric connects in-memory endpoints to ports of a model switch. Every frame crossing a link
// (host to switch, or switch to host) goes through the impairment, decided by a seeded generator.
// The switch processes frames one at a time in one goroutine, as a pipeline does.
type Fabric struct {
	sw    *model.Switch
	imp   Impairment
	mu    sync.Mutex
	rng   *rand.Rand
	ports [model.MaxPort + 1]atomic.Pointer[transport.Mem] // attached hosts; set while traffic flows
	in    chan inFrame
	done  chan struct{}
	wg    sync.WaitGroup

	Lost, Duplicated, Reordered, Corrupted atomic.Uint64
}

type inFrame struct {
	port  uint16
	frame []byte
}

// NewFabric starts a fabric around sw. Attach every port before traffic flows.
func NewFabric(sw *model.Switch, imp Impairment, seed uint64) *Fabric {
	if imp.MaxDelay == 0 {
		imp.MaxDelay = 2 * time.Millisecond
	}
	f := &Fabric{sw: sw, imp: imp, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		in: make(chan inFrame, 8192), done: make(chan struct{})}
	sw.QueueDepth = func(port uint16) uint32 {
		if m := f.port(port); m != nil {
			return uint32(m.Len())
		}
		return 0
	}
	f.wg.Add(1)
	go f.run()
	return f
}

// Attach returns the endpoint of a host connected to switch port (0..model.MaxPort).
func (f *Fabric) Attach(port uint16) *transport.Mem {
	m := transport.NewMem(func(b []byte) error {
		f.impair(b, func(b []byte) {
			select {
			case f.in <- inFrame{port, b}:
			case <-f.done:
			}
		})
		return nil
	}, 4096)
	f.ports[port].Store(m)
	return m
}

func (f *Fabric) port(p uint16) *transport.Mem {
	if int(p) >= len(f.ports) {
		return nil
	}
	return f.ports[p].Load()
}

// Close stops the switch goroutine.
func (f *Fabric) Close() {
	close(f.done)
	f.wg.Wait()
}

func (f *Fabric) run() {
	defer f.wg.Done()
	for {
		select {
		case <-f.done:
			return
		case p := <-f.in:
			for _, o := range f.sw.Process(p.port, p.frame) {
				if m := f.port(o.Port); m != nil {
					f.impair(o.Frame, func(b []byte) { m.Deliver(b) })
				}
			}
		}
	}
}

// impair delivers b zero, one or two times, possibly late, possibly corrupted. b is the fabric's
// own copy.
func (f *Fabric) impair(b []byte, deliver func([]byte)) {
	f.mu.Lock()
	r := f.rng.Float64()
	delay := time.Duration(f.rng.Int64N(int64(f.imp.MaxDelay)))
	reorder := f.rng.Float64() < f.imp.Reorder
	corrupt, bit := f.rng.Float64() < f.imp.Corrupt, f.rng.IntN(32*wire.NumValues)
	f.mu.Unlock()
	if corrupt && len(b) == wire.FrameLen && binary.BigEndian.Uint16(b[36:]) == wire.UDPPort {
		f.Corrupted.Add(1)
		b[wire.FrameLen-4*wire.NumValues+bit/8] ^= 1 << (bit % 8)
	}
	switch {
	case r < f.imp.Loss:
		f.Lost.Add(1)
		return
	case r < f.imp.Loss+f.imp.Dup:
		f.Duplicated.Add(1)
		deliver(append([]byte(nil), b...))
	}
	if reorder {
		f.Reordered.Add(1)
		time.AfterFunc(delay, func() { deliver(b) })
		return
	}
	deliver(b)
}
