package ps

import (
	"encoding/binary"
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

const (
	modeFixed  = iota // summing aggregatable fixed-point/int32 values
	modeBypass        // overflowed: summing BYPASS contributions exactly on the PS
)

// chunk is an incomplete (job, seq) at the PS.
type chunk struct {
	bitmap   uint32
	ecn      bool
	mode     uint8
	float    bool // BYPASS contributions are float32 bit patterns
	floatSet bool
	// On the fixed-point path the sums are in sum32 until one leaves int32 (wide), then in sum; a
	// fresh chunk's sums are stale until its first contribution, which assigns. On the exact path
	// sum holds int64 sums, or, for FLOAT contributions, float64 bit patterns.
	wide     bool
	sum32    narrow
	sum      sums
	redirect []byte // the OVERFLOW or CORRUPT result, resent to workers that missed it
}

// assign starts the fixed-point sums from v.
func (cs *chunk) assign(v *packed) {
	if cs.wide = !narrowLanes; cs.wide {
		assignValues(&cs.sum, v)
	} else {
		assignNarrow(&cs.sum32, v)
	}
}

// add adds v to the fixed-point sums, exactly: from the add that would take a sum out of int32 on,
// in int64 lanes. The common case is one kernel call.
func (cs *chunk) add(v *packed) {
	if cs.wide || !addNarrow(&cs.sum32, v) {
		cs.addWide(v)
	}
}

// addWide is add in int64 lanes; the first time, it undoes addNarrow's add and widens the sums.
func (cs *chunk) addWide(v *packed) {
	if !cs.wide {
		subNarrow(&cs.sum32, v)
		widen(&cs.sum, &cs.sum32)
		cs.wide = true
	}
	addValues(&cs.sum, v)
}

// encode writes the fixed-point sums into out and reports whether every one lies strictly inside
// the int32 bounds.
func (cs *chunk) encode(out *packed) bool {
	if cs.wide {
		return encodeSums(out, &cs.sum)
	}
	return encodeNarrow(out, &cs.sum32)
}

// job is the PS state of one job. Memory is bounded: at most Horizon incomplete chunks and Horizon
// kept results (each one encoded frame).
type job struct {
	cfg      JobConfig
	mask     uint32
	pending  seqMap[*chunk]
	kept     seqMap[[]byte]
	fifo     []uint32 // completed seqs in completion order, a ring of Horizon
	head     int
	floor    uint32 // newest seq whose result was dropped; older data is TooOld
	hasFloor bool
	pool     []*chunk
	c        Counters
}

func newJob(cfg JobConfig, shift uint8) *job {
	// Home slots for 2*Horizon seqs: the kept results and the incomplete chunks lie within about that
	// span (of the server's lane's seqs, 2^shift apart).
	return &job{cfg: cfg, mask: cfg.mask(), pending: newSeqMap[*chunk](2*cfg.Horizon, shift),
		kept: newSeqMap[[]byte](2*cfg.Horizon, shift), fifo: make([]uint32, 0, cfg.Horizon)}
}

// supersedes reports whether a packet with bitmap p may replace a held partial with bitmap held:
// p holds every worker of held and more. A worker sends the same values for a chunk every time, so
// the packet's sum includes the held one exactly. This happens when a partial left a slot early
// (preempted, stale) and the rest re-formed in the slot with a worker already counted (its RESEND
// flushed the slot); without this rule that packet is ignored and the missing workers time out.
func supersedes(p, held uint32) bool { return p&held == held && p != held }

// newer reports whether seq a is newer than b in serial-number arithmetic.
func newer(a, b uint32) bool { return int32(a-b) > 0 }

func (j *job) kind(h *wire.Header) {
	switch f := h.Flags; {
	case f&wire.FlagBypass != 0:
		j.c.Bypass++
	case f&wire.FlagPreempted != 0:
		j.c.Preempted++
	case f&wire.FlagStale != 0:
		j.c.Stale++
	case f&wire.FlagFlushed != 0:
		j.c.Flushed++
	case f&wire.FlagCollision != 0:
		j.c.Collision++
	case f&wire.FlagResend != 0:
		j.c.Resend++
	case h.Bitmap == j.mask:
		j.c.Complete++
	default:
		j.c.Partial++
	}
}

// handle processes one data packet, h with its values v (K big-endian int32, read in place); r
// builds and emits results.
func (j *job) handle(h *wire.Header, v *packed, r *resulter) {
	j.kind(h)
	q := h.Seq
	if h.Bitmap == 0 || h.Bitmap&^j.mask != 0 {
		j.c.BadBitmap++
		return
	}
	// A seq is pending or kept, never both (its accumulator goes when its result is kept), so
	// the common case, a chunk in progress, takes one look-up.
	cs, ok := j.pending.get(q)
	if !ok {
		if res, kept := j.kept.get(q); kept {
			if h.Flags&wire.FlagResend != 0 {
				j.c.ResendAnswered++
				r.resend(res, h.Bitmap, &j.c)
			} else {
				j.c.Late++
			}
			return
		}
	}
	if j.hasFloor && !newer(q, j.floor) {
		j.c.TooOld++
		return
	}
	if !ok {
		if j.pending.n >= j.cfg.Horizon {
			j.c.PendingFull++
			return
		}
		cs = j.alloc()
		j.pending.put(q, cs)
	}
	if cs.mode == modeFixed {
		switch {
		case h.Flags&wire.FlagBypass != 0:
			// A worker is already on the exact path (it saw an OVERFLOW result this PS sent
			// before a restart, or it chose to): follow it; the others learn by RESEND.
			cs.reset(modeBypass)
		case h.Flags&wire.FlagOverflow != 0:
			j.c.Merged++
			j.redirect(cs, h, wire.FlagOverflow, r)
			return
		default:
			j.mergeFixed(cs, h, v, r)
			return
		}
	}
	j.mergeBypass(cs, h, v, r)
}

// value is the i-th value of a packet.
func value(v *packed, i int) int32 { return int32(binary.BigEndian.Uint32(v[4*i:])) }

// verified reports whether values pass the job's integrity check (always, with it off).
func (j *job) verified(v *packed) bool { return j.cfg.NoIntegrity || wire.IntegrityOK(v) }

func (j *job) mergeFixed(cs *chunk, h *wire.Header, v *packed, r *resulter) {
	switch {
	case cs.bitmap == 0:
		j.c.Merged++
		cs.assign(v)
	case cs.bitmap&h.Bitmap == 0:
		j.c.Merged++
		cs.add(v)
	case supersedes(h.Bitmap, cs.bitmap):
		j.c.Replaced++
		cs.assign(v)
	default:
		j.c.Overlap++
		return
	}
	cs.bitmap |= h.Bitmap
	cs.ecn = cs.ecn || h.Flags&wire.FlagECN != 0
	if cs.bitmap != j.mask {
		return
	}
	if !cs.encode(&r.values) {
		j.redirect(cs, h, wire.FlagOverflow, r)
		return
	}
	// The integrity lane was summed with the others, and the check is linear: the sum verifies
	// exactly when every contribution and every partial sum merged into it did, so one check per
	// chunk covers them all. A failure cannot say which packet went wrong, nor whether a
	// switch's slot memory did it: the whole chunk moves to the PS path, around every slot, and
	// completes exactly from the workers' BYPASS copies. The result carries the summed lane,
	// which the workers check in turn.
	if !j.verified(&r.values) {
		j.redirect(cs, h, wire.FlagCorrupt, r)
		return
	}
	j.complete(h, cs, 0, &r.values, r)
}

// redirect drops the fixed-point sum and asks every worker, with an OVERFLOW or CORRUPT result,
// to resend the chunk with BYPASS.
func (j *job) redirect(cs *chunk, h *wire.Header, flag wire.Flags, r *resulter) {
	cs.reset(modeBypass)
	cs.redirect = r.build(nil, h, flag, j.mask, nil)
	if flag == wire.FlagCorrupt {
		j.c.CorruptResults++
	} else {
		j.c.OverflowResults++
	}
	r.out(cs.redirect)
}

func (j *job) mergeBypass(cs *chunk, h *wire.Header, v *packed, r *resulter) {
	if h.Flags&wire.FlagBypass == 0 {
		if h.Flags&wire.FlagResend == 0 {
			j.c.OverflowIgnored++
			return
		}
		if cs.redirect == nil {
			cs.redirect = r.build(nil, h, wire.FlagOverflow, j.mask, nil)
		}
		j.c.ResendAnswered++
		r.out(cs.redirect)
		return
	}
	float := h.Flags&wire.FlagFloat != 0
	if cs.floatSet && float != cs.float {
		j.c.FloatMismatch++
		return
	}
	replace := cs.bitmap != 0 && supersedes(h.Bitmap, cs.bitmap)
	switch {
	case cs.bitmap&h.Bitmap != 0 && !replace:
		j.c.Overlap++
		return
	case !j.verified(v):
		// Float sums are not linear in the bit patterns: each copy is checked on its own and a
		// bad one dropped; its sender's timer resends it.
		j.c.Corrupt++
		return
	case replace:
		j.c.Replaced++
	default:
		j.c.Merged++
	}
	cs.float, cs.floatSet = float, true
	if replace {
		clear(cs.sum[:])
	}
	for i := range cs.sum {
		if x := value(v, i); float {
			f := math.Float64frombits(uint64(cs.sum[i])) + float64(math.Float32frombits(uint32(x)))
			cs.sum[i] = int64(math.Float64bits(f))
		} else {
			cs.sum[i] += int64(x)
		}
	}
	cs.bitmap |= h.Bitmap
	cs.ecn = cs.ecn || h.Flags&wire.FlagECN != 0
	if cs.bitmap != j.mask {
		return
	}
	flags := wire.FlagBypass
	out := &r.values
	if float {
		flags |= wire.FlagFloat
		for i, s := range cs.sum {
			binary.BigEndian.PutUint32(out[4*i:], math.Float32bits(float32(math.Float64frombits(uint64(s)))))
		}
	} else {
		for i, s := range cs.sum {
			switch {
			case s > math.MaxInt32:
				s, flags = math.MaxInt32, flags|wire.FlagOverflow
			case s < math.MinInt32:
				s, flags = math.MinInt32, flags|wire.FlagOverflow
			}
			binary.BigEndian.PutUint32(out[4*i:], uint32(s))
		}
		if flags&wire.FlagOverflow != 0 {
			j.c.IntOverflow++
		}
	}
	if !j.cfg.NoIntegrity {
		// Float sums are not linear in the bit patterns, and saturated sums lost the linearity:
		// the result's checksum is that of the values it carries.
		wire.SetIntegrity(out)
	}
	j.c.BypassResults++
	j.complete(h, cs, flags, out, r)
}

// complete emits and keeps the result of h.Seq and forgets its accumulator. The result is encoded
// into the buffer of the kept result it displaces, so a job in steady state allocates nothing.
func (j *job) complete(h *wire.Header, cs *chunk, flags wire.Flags, out *packed, r *resulter) {
	if cs.ecn {
		flags |= wire.FlagECN
		j.c.ECNResults++
	}
	q := h.Seq
	var buf []byte
	if len(j.fifo) < j.cfg.Horizon {
		j.fifo = append(j.fifo, q)
	} else {
		old := j.fifo[j.head]
		buf, _ = j.kept.del(old)
		j.fifo[j.head] = q
		if j.head++; j.head == j.cfg.Horizon {
			j.head = 0
		}
		if !j.hasFloor || newer(old, j.floor) {
			j.floor, j.hasFloor = old, true
		}
	}
	res := r.build(buf, h, flags, j.mask, out)
	j.c.Results++
	r.out(res)
	j.pending.del(q)
	j.pool = append(j.pool, cs)
	j.kept.put(q, res)
	// Chunks at or below the floor can no longer complete usefully (no worker waits for them):
	// forget them so a dead chunk cannot pin memory.
	if j.hasFloor && j.pending.n > j.cfg.Window {
		j.pending.prune(func(s uint32) bool { return !newer(s, j.floor) },
			func(c *chunk) { j.pool = append(j.pool, c) })
	}
}

func (j *job) alloc() *chunk {
	if n := len(j.pool); n > 0 {
		cs := j.pool[n-1]
		j.pool = j.pool[:n-1]
		cs.reset(modeFixed)
		return cs
	}
	return &chunk{}
}

// reset empties the chunk for reuse in mode. The exact path starts from zero sums; the
// fixed-point path's first contribution assigns them, so they are not cleared here.
func (cs *chunk) reset(mode uint8) {
	cs.bitmap, cs.ecn, cs.mode, cs.float, cs.floatSet, cs.redirect, cs.wide = 0, false, mode, false, false, nil, false
	if mode == modeBypass {
		clear(cs.sum[:])
	}
}
