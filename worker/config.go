package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/inapack/inapack/p4src/wire"
)

// Config describes one worker of one job. Every worker of a job must use the same Job, Workers,
// SlotBase and Window, and must call AllReduce with tensors of the same length in the same order:
// sequence numbers (and so slots) are derived from that shared order.
type Config struct {
	Job      uint16 // 1..wire.MaxJobs-1
	Rank     int    // this worker's bit in the bitmap, 0..Workers-1
	Workers  int    // members of the job, 1..32
	Priority uint8  // requested priority; the switch clamps it to the job's cap
	// Member is this worker's index among the job's workers behind its switch port (the INA
	// header's member field, 0..wire.MaxMembers-1): 0 for a port's only worker. The switch takes
	// the worker's bit from its entry for (job, port, member) and drops a member it has none for.
	Member uint8

	// SlotBase and Window fix the slot of each chunk: slot = SlotBase + seq mod Window. Window is
	// also the most chunks a worker has in flight, so two chunks of this job in flight at once
	// never share a slot. SlotBase+Window must not exceed the switch's active_slots.
	SlotBase uint16
	Window   int
	// InitialWindow is the starting congestion window in chunks (default min(8, Window)).
	InitialWindow int

	SrcMAC, DstMAC net.HardwareAddr // this host; the next hop (the switch forwards by table anyway)
	SrcIP, DstIP   net.IP           // this host; the job's PS

	// RTO is the initial retransmission timeout (default 50ms); MinRTO and MaxRTO bound the adaptive
	// one (defaults max(10ms, Workers x 2.5ms) and 1s). The floor is high for a datacenter because software switches and
	// agents sharing a few cores see scheduling delays of several milliseconds, and a spurious
	// RESEND is expensive: it flushes a partial sum that the peers' packets then re-open. A chunk
	// completes only once every worker has run, so the floor grows with the job. Most losses are
	// repaired sooner, by fast retransmission (README.md, which has the measurements).
	RTO, MinRTO, MaxRTO time.Duration
	// NoIntegrity turns off the integrity lane (wire.IntegrityLane; docs/protocol.md,
	// "Integrity"): chunks then carry K values instead of K-1 and a corrupted value goes
	// undetected. The job's PS and all its workers must agree.
	NoIntegrity bool
	// ProgressTimeout is how long AllReduce waits without any chunk completing before it gives up
	// with ErrNoProgress (default 5s).
	ProgressTimeout time.Duration
	// Trace, if set, gets a record for every backoff of the retransmission timer: the oldest
	// unfinished chunk (seq, retransmissions), the chunks out, how long no result has come, and the
	// congestion window. Backoffs are where a stall's time goes (README.md traces one).
	Trace *slog.Logger
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("worker: bad config")

func (c *Config) setDefaults() error {
	switch {
	case c.Job == 0 || c.Job >= wire.MaxJobs:
		return fmt.Errorf("%w: job %d outside 1..%d", ErrConfig, c.Job, wire.MaxJobs-1)
	case c.Workers < 1 || c.Workers > wire.MaxWorkers:
		return fmt.Errorf("%w: %d workers outside 1..%d", ErrConfig, c.Workers, wire.MaxWorkers)
	case c.Rank < 0 || c.Rank >= c.Workers:
		return fmt.Errorf("%w: rank %d outside 0..%d", ErrConfig, c.Rank, c.Workers-1)
	case c.Member >= wire.MaxMembers:
		return fmt.Errorf("%w: member %d outside 0..%d", ErrConfig, c.Member, wire.MaxMembers-1)
	case c.Window < 1:
		return fmt.Errorf("%w: window %d: a job needs at least one slot", ErrConfig, c.Window)
	case int(c.SlotBase)+c.Window > wire.NumSlots:
		return fmt.Errorf("%w: slots %d..%d outside 0..%d", ErrConfig, c.SlotBase, int(c.SlotBase)+c.Window-1, wire.NumSlots-1)
	}
	if c.InitialWindow <= 0 {
		c.InitialWindow = 8
	}
	c.InitialWindow = min(c.InitialWindow, c.Window)
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.RTO, 50*time.Millisecond)
	def(&c.MaxRTO, time.Second)
	def(&c.MinRTO, min(max(10*time.Millisecond, time.Duration(c.Workers)*2500*time.Microsecond), c.MaxRTO))
	def(&c.ProgressTimeout, 5*time.Second)
	if c.MinRTO > c.MaxRTO {
		return fmt.Errorf("%w: MinRTO %v above MaxRTO %v", ErrConfig, c.MinRTO, c.MaxRTO)
	}
	c.RTO = min(max(c.RTO, c.MinRTO), c.MaxRTO)
	if c.SrcIP.To4() == nil || c.DstIP.To4() == nil {
		return fmt.Errorf("%w: SrcIP and DstIP must be IPv4", ErrConfig)
	}
	return nil
}

// width is the tensor values one chunk carries: K, less the integrity lane when it is on.
func (c *Config) width() int {
	if c.NoIntegrity {
		return K
	}
	return wire.IntegrityWidth
}

// ChunkValues is the tensor values one packet carries for this worker: wire.NumValues, less the
// integrity lane unless NoIntegrity.
func (w *Worker) ChunkValues() int { return w.cfg.width() }

// slot is the aggregator slot of seq: consecutive seqs cycle through the job's Window slots, so a
// slot's next use by this job always carries a newer seq (the switch's stale rule relies on it).
func (c *Config) slot(seq uint32) uint16 { return c.SlotBase + uint16(seq%uint32(c.Window)) }
