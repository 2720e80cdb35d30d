package ps

// seqMap maps a job's chunk seqs to V. A job's live seqs are nearly consecutive (its workers' window
// and the results it keeps), so each seq has a home slot, seq mod len(slots), found by indexing
// with no hashing; a seq whose home slot another seq holds (hostile or far-apart seqs) goes to a
// map, so any set of seqs works, only slower. The owner bounds how many entries it puts.
type seqMap[V any] struct {
	slots []seqSlot[V] // a power of two
	// shift drops the seq's low bits from its home slot: a server that is one lane of 2^shift
	// (Group) sees every 2^shift-th seq, which would otherwise use one home slot in 2^shift.
	shift uint8
	spill map[uint32]V // seqs whose home slot was taken when they were put
	n     int
}

type seqSlot[V any] struct {
	seq  uint32
	used bool
	v    V
}

// maxSeqSlots caps the slots of one map (a job with a huge horizon spills instead).
const maxSeqSlots = 1 << 14

// newSeqMap returns a map with at least want slots (a power of two, at most maxSeqSlots) for seqs
// 2^shift apart.
func newSeqMap[V any](want int, shift uint8) seqMap[V] {
	n := 64
	for n < want && n < maxSeqSlots {
		n *= 2
	}
	return seqMap[V]{slots: make([]seqSlot[V], n), shift: shift}
}

func (m *seqMap[V]) home(q uint32) *seqSlot[V] {
	return &m.slots[(q>>m.shift)&uint32(len(m.slots)-1)]
}

// get returns q's value. A spilled seq found with its home slot free moves there.
func (m *seqMap[V]) get(q uint32) (v V, ok bool) {
	s := m.home(q)
	if s.used && s.seq == q {
		return s.v, true
	}
	if len(m.spill) == 0 {
		return v, false
	}
	if v, ok = m.spill[q]; ok && !s.used {
		delete(m.spill, q)
		*s = seqSlot[V]{seq: q, used: true, v: v}
	}
	return v, ok
}

// put adds q, which must not be in the map.
func (m *seqMap[V]) put(q uint32, v V) {
	m.n++
	if s := m.home(q); !s.used {
		*s = seqSlot[V]{seq: q, used: true, v: v}
		return
	}
	if m.spill == nil {
		m.spill = map[uint32]V{}
	}
	m.spill[q] = v
}

// del removes q and returns its value.
func (m *seqMap[V]) del(q uint32) (v V, ok bool) {
	if s := m.home(q); s.used && s.seq == q {
		v = s.v
		*s = seqSlot[V]{}
		m.n--
		return v, true
	}
	if v, ok = m.spill[q]; ok {
		delete(m.spill, q)
		m.n--
	}
	return v, ok
}

// prune removes every entry whose seq drop reports, handing its value to free.
func (m *seqMap[V]) prune(drop func(q uint32) bool, free func(V)) {
	for i := range m.slots {
		if s := &m.slots[i]; s.used && drop(s.seq) {
			free(s.v)
			*s = seqSlot[V]{}
			m.n--
		}
	}
	for q, v := range m.spill {
		if drop(q) {
			free(v)
			delete(m.spill, q)
			m.n--
		}
	}
}
