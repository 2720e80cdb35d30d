package worker

import (
	"sync/atomic"
	"time"
)

// Stats counts what a worker did. Fields are read atomically with Snapshot while AllReduce runs.
type Stats struct {
	DataSent       atomic.Uint64 // data packets sent, first transmissions
	Resent         atomic.Uint64 // retransmissions, after a timeout or fast (RESEND, or plain: PlainResent)
	PlainResent    atomic.Uint64 // first timer retries of a chunk no later chunk had overtaken, sent without RESEND (also in Resent)
	FastResent     atomic.Uint64 // retransmissions because later chunks completed (also in Resent)
	BypassSent     atomic.Uint64 // BYPASS packets sent after an OVERFLOW result (first transmissions)
	Results        atomic.Uint64 // results that completed a chunk (= chunks completed)
	ResultsIgnored atomic.Uint64 // results for chunks not in flight (duplicates, late answers)
	Overflows      atomic.Uint64 // OVERFLOW results (chunk moved to the PS's exact path)
	// Corrupt counts results that failed the integrity check here (dropped, the chunk resent);
	// CorruptRedirects, CORRUPT results: the PS caught a corrupted sum of the chunk, which then
	// moves to the PS's exact path.
	Corrupt, CorruptRedirects atomic.Uint64
	ECN                       atomic.Uint64 // results carrying ECN
	WindowCuts                atomic.Uint64 // multiplicative decreases (ECN, a timeout, losses above randomLoss)
	TimerBackoffs             atomic.Uint64 // retransmission timer doublings (an expiry with no result since the chunk was sent)
	SpuriousTimeouts          atomic.Uint64 // silent expiries undone: a chunk sent before it completed on its first transmission
	TimerHeld                 atomic.Uint64 // expiries in a silence not resent: only the oldest chunk is (the probe)
	RxErrors                  atomic.Uint64 // frames received that are not INA results of this job
}

// StatsSnapshot is a copy of Stats, with the same meanings.
type StatsSnapshot struct {
	DataSent, Resent, BypassSent uint64
	FastResent, PlainResent      uint64
	Results, ResultsIgnored      uint64
	Overflows, ECN, WindowCuts   uint64
	Corrupt, CorruptRedirects    uint64
	TimerBackoffs                uint64
	SpuriousTimeouts, TimerHeld  uint64
	RxErrors                     uint64
	Window                       float64       // current congestion window in chunks
	RTO                          time.Duration // the retransmission timer's estimate (RFC 6298), before any backoff
}

// Snapshot returns the current values.
func (w *Worker) Snapshot() StatsSnapshot {
	s := &w.stats
	return StatsSnapshot{
		DataSent: s.DataSent.Load(), Resent: s.Resent.Load(), BypassSent: s.BypassSent.Load(), FastResent: s.FastResent.Load(),
		PlainResent: s.PlainResent.Load(),
		Results:     s.Results.Load(), ResultsIgnored: s.ResultsIgnored.Load(), Overflows: s.Overflows.Load(),
		Corrupt: s.Corrupt.Load(), CorruptRedirects: s.CorruptRedirects.Load(),
		ECN: s.ECN.Load(), WindowCuts: s.WindowCuts.Load(), TimerBackoffs: s.TimerBackoffs.Load(), SpuriousTimeouts: s.SpuriousTimeouts.Load(), TimerHeld: s.TimerHeld.Load(), RxErrors: s.RxErrors.Load(),
		Window: float64(w.cwndMilli.Load()) / 1000, RTO: time.Duration(w.rtoNanos.Load()),
	}
}
