package model

import (
	"fmt"
	"math"

	"github.com/inapack/inapack/p4src/wire"
)

// Slot is one aggregator slot: the slot_* registers at one index.
type Slot struct {
	Job      uint16
	Seq      uint32
	Priority uint8 // the owner's clamped priority
	Bitmap   uint32
	Count    uint8 // 0 = free
	State    uint8 // SlotECN | SlotOverflow | SlotComplete
	Values   [wire.NumValues]int32
}

// slot_state bits.
const (
	SlotECN      = 0x1 // a contribution carried ECN
	SlotOverflow = 0x2 // a saturating add clipped a value
	SlotComplete = 0x4 // ATP mode: count reached fan-in, waiting for the result
)

// Free reports whether the slot holds nothing.
func (sl Slot) Free() bool { return sl.Count == 0 }

// release frees the slot. Like the P4 program it writes only slot_count and slot_state; the other
// registers keep stale values that mean nothing while the slot is free.
func (sl *Slot) release() {
	sl.Count = 0
	sl.State = 0
}

// flags are the INA flags a packet carrying this slot's sum gets from slot_state.
func (sl *Slot) flags() wire.Flags {
	var f wire.Flags
	if sl.State&SlotECN != 0 {
		f |= wire.FlagECN
	}
	if sl.State&SlotOverflow != 0 {
		f |= wire.FlagOverflow
	}
	return f
}

// claim makes the slot hold one contribution; values are the packet's big-endian payload.
func (sl *Slot) claim(job uint16, seq uint32, prio uint8, bit uint32, ecn bool, values []byte) {
	sl.Job, sl.Seq, sl.Priority, sl.Bitmap, sl.Count, sl.State = job, seq, prio, bit, 1, 0
	if ecn {
		sl.State = SlotECN
	}
	for i := range sl.Values {
		sl.Values[i] = int32(be32(values[4*i:]))
	}
}

// add adds a contribution with saturation (int<32> |+|) and reports whether any value clipped.
func (sl *Slot) add(bit uint32, ecn bool, values []byte) (clipped bool) {
	for i := range sl.Values {
		r := int64(sl.Values[i]) + int64(int32(be32(values[4*i:])))
		if r > math.MaxInt32 {
			r, clipped = math.MaxInt32, true
		} else if r < math.MinInt32 {
			r, clipped = math.MinInt32, true
		}
		sl.Values[i] = int32(r)
	}
	sl.Bitmap |= bit
	sl.Count++
	if ecn {
		sl.State |= SlotECN
	}
	if clipped {
		sl.State |= SlotOverflow
	}
	return clipped
}

func checkSlot(i int) error {
	if i < 0 || i >= wire.NumSlots {
		return fmt.Errorf("%w: slot %d outside 0..%d", ErrInvalid, i, wire.NumSlots-1)
	}
	return nil
}

// Slot returns the registers of slot i (the zero Slot when i is out of range).
func (s *Switch) Slot(i int) Slot {
	if checkSlot(i) != nil {
		return Slot{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slots[i]
}

// SetSlot writes every register of slot i.
func (s *Switch) SetSlot(i int, v Slot) error {
	if err := checkSlot(i); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots[i] = v
	return nil
}

// ClearSlot zeroes every register of slot i.
func (s *Switch) ClearSlot(i int) error {
	return s.SetSlot(i, Slot{})
}

// ClearJobSlots zeroes every slot that job holds (slot_job == job, count != 0), as the controller
// does when a job ends, and returns how many it cleared.
func (s *Switch) ClearJobSlots(job uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i := range s.slots {
		if sl := &s.slots[i]; !sl.Free() && sl.Job == job {
			*sl = Slot{}
			n++
		}
	}
	return n
}
