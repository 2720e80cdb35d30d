package ps

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"sync"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/transport"
)

// Server is a parameter server for several jobs. Handle and Serve may be called from one goroutine
// while others add or remove jobs and read counters.
type Server struct {
	mu     sync.Mutex
	jobs   map[uint16]*job
	byID   [wire.MaxJobs]*job // jobs, indexed for the per-packet lookup
	g      Global
	r      resulter
	header wire.Header // decoding scratch
	shift  uint8       // lane of 2^shift in a Group: its seqs are 2^shift apart
}

// New returns a server for cfg's jobs.
func New(cfg Config) (*Server, error) {
	if cfg.MAC == nil || len(cfg.MAC) != 6 || cfg.IP.To4() == nil {
		return nil, fmt.Errorf("%w: the PS needs a 6-byte MAC and an IPv4 address", ErrConfig)
	}
	if cfg.ResultMAC == nil {
		cfg.ResultMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if cfg.ResultIP == nil {
		cfg.ResultIP = net.IPv4bcast
	}
	s := &Server{jobs: map[uint16]*job{}}
	s.r.tmpl = wire.Frame{
		// 4-byte IPs: the encoder takes them as they are, with no IPv4-in-IPv6 test per result.
		Addr: wire.Addr{SrcMAC: cfg.MAC, DstMAC: cfg.ResultMAC, SrcIP: cfg.IP.To4(), DstIP: cfg.ResultIP.To4()},
		TTL:  64, SrcPort: wire.UDPPort,
	}
	for _, jc := range cfg.Jobs {
		if err := s.AddJob(jc); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AddJob starts serving a job. Adding a job already served is an error.
func (s *Server) AddJob(jc JobConfig) error {
	if err := jc.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[jc.Job]; ok {
		return fmt.Errorf("%w: job %d already served", ErrConfig, jc.Job)
	}
	s.jobs[jc.Job] = newJob(jc, s.shift)
	s.byID[jc.Job] = s.jobs[jc.Job]
	return nil
}

// RemoveJob stops serving a job and frees its state; it reports whether the job was served.
func (s *Server) RemoveJob(id uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.jobs[id]
	delete(s.jobs, id)
	if int(id) < len(s.byID) {
		s.byID[id] = nil
	}
	return ok
}

// Handle processes one received frame, calling emit for each result frame to send. The values are
// merged straight from frame, which Handle does not keep. emit must not keep its slice after it
// returns: result buffers are recycled.
func (s *Server) Handle(frame []byte, emit func([]byte)) {
	s.mu.Lock()
	s.handle(frame, emit)
	s.mu.Unlock()
}

// HandleBatch is Handle for each frame in turn under one lock, as Serve takes a ring's batch.
func (s *Server) HandleBatch(frames [][]byte, emit func([]byte)) {
	s.mu.Lock()
	for _, f := range frames {
		s.handle(f, emit)
	}
	s.mu.Unlock()
}

// handle is Handle under s.mu.
func (s *Server) handle(frame []byte, emit func([]byte)) {
	s.g.Frames++
	h := &s.header
	values, err := h.UnmarshalFrameView(frame)
	if err != nil {
		if errors.Is(err, wire.ErrNotINA) {
			s.g.NotINA++
		} else {
			s.g.Malformed++
		}
		return
	}
	if h.Type != wire.TypeData {
		s.g.NotData++
		return
	}
	var j *job
	if int(h.Job) < len(s.byID) {
		j = s.byID[h.Job]
	}
	if j == nil {
		s.g.UnknownJob++
		return
	}
	s.r.out = emit
	j.handle(h, (*packed)(values), &s.r)
}

// Serve receives frames on t and sends results back on t until ctx is done or t fails. On a
// transport with rings (transport.BatchReceiver and transport.Batcher) frames are merged in place
// from the receive ring, under one lock per batch, and the results of a batch leave in one send.
func (s *Server) Serve(ctx context.Context, t transport.Transport) error {
	send := t.Send
	batch, _ := t.(transport.Batcher)
	if batch != nil {
		send = batch.Queue
	}
	emit := func(b []byte) {
		if err := send(b); err != nil {
			s.g.SendErrors++ // under s.mu: emit runs inside handle
		}
	}
	// RecvBatch waits only before the first frame of a batch, so holding s.mu from that frame to
	// the end of the batch never holds it while waiting.
	locked := false
	handle := func(f []byte) {
		if !locked {
			s.mu.Lock()
			locked = true
		}
		s.handle(f, emit)
	}
	br, _ := t.(transport.BatchReceiver)
	buf := make([]byte, 2048)
	for ctx.Err() == nil {
		deadline := time.Now().Add(100 * time.Millisecond)
		var err error
		if br != nil {
			_, err = br.RecvBatch(deadline, 64, handle)
		} else {
			var n int
			if n, err = t.Recv(buf, deadline); err == nil {
				handle(buf[:n])
			}
		}
		if locked {
			s.mu.Unlock()
			locked = false
		}
		if batch != nil {
			if ferr := batch.Flush(); ferr != nil && err == nil {
				err = ferr
			}
		}
		if errors.Is(err, transport.ErrTimeout) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("ps: receive: %w", err)
		}
	}
	return nil
}

// Counters returns a copy of a job's counters.
func (s *Server) Counters(id uint16) (Counters, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	if j == nil {
		return Counters{}, false
	}
	return j.c, true
}

// Global returns a copy of the counters that belong to no job.
func (s *Server) Global() Global {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.g
}

// Pending returns how many chunks of a job are incomplete and how many results are kept.
func (s *Server) Pending(id uint16) (pending, kept int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[id]; j != nil {
		return j.pending.n, j.kept.n
	}
	return 0, 0
}

// resulter builds result frames and hands them to out, the emit function of the current Handle.
type resulter struct {
	tmpl    wire.Frame
	out     func([]byte)
	values  packed              // a result's values, encoded before its frame
	unicast [wire.FrameLen]byte // a kept result re-addressed to one worker (resend)
}

// resend answers a RESEND from the workers of bitmap with the kept result res. A RESEND that
// reached the PS as one worker's (the switch rewrote the worker's bitmap to its bit) gets a copy
// with FLAG_UNICAST and that bit as the bitmap, which the switches deliver to that worker alone;
// the kept copy stays as it is. A flushed partial's RESEND carries several workers' bits, and the
// result goes to the job's group as the first time.
func (r *resulter) resend(res []byte, bitmap uint32, c *Counters) {
	if bits.OnesCount32(bitmap) != 1 {
		r.out(res)
		return
	}
	c.ResendUnicast++
	u := r.unicast[:]
	copy(u, res)
	wire.SetUnicast(u, bitmap)
	r.out(u)
}

// build encodes the result for h's (job, seq, slot) with flags and values (nil: zeros) into buf
// (nil or too short: a new buffer).
func (r *resulter) build(buf []byte, h *wire.Header, flags wire.Flags, mask uint32, v *packed) []byte {
	f := &r.tmpl
	f.ID++
	i := &f.INA
	i.Version, i.Type, i.Priority, i.Flags = wire.Version, wire.TypeResult, h.Priority, flags
	i.Job, i.Slot, i.Seq, i.Bitmap = h.Job, h.Slot, h.Seq, mask
	if len(buf) < wire.FrameLen {
		buf = make([]byte, wire.FrameLen)
	}
	buf = buf[:wire.FrameLen]
	_ = f.MarshalHeadersTo(buf) // cannot fail: buf holds FrameLen bytes
	values := (*packed)(buf[wire.FrameLen-len(packed{}):])
	if v != nil {
		*values = *v
	} else {
		*values = packed{}
	}
	return buf
}
