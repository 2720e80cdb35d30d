package refswitch

import (
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// unknownEntity is the error for an id that is not a model entity of the expected sort.
func unknownEntity(p *pipeline, id uint32, sort string) error {
	if n, ok := p.unimplemented[id]; ok {
		return status.Errorf(codes.Unimplemented, "%s is not implemented by the reference switch", n)
	}
	return status.Errorf(codes.NotFound, "unknown %s id %d", sort, id)
}

// slotField reads register r of a slot as an unsigned value (int32 values as their bit pattern).
func slotField(v *model.Slot, r int) uint64 {
	switch r {
	case regJob:
		return uint64(v.Job)
	case regSeq:
		return uint64(v.Seq)
	case regPriority:
		return uint64(v.Priority)
	case regBitmap:
		return uint64(v.Bitmap)
	case regCount:
		return uint64(v.Count)
	case regState:
		return uint64(v.State)
	}
	return uint64(uint32(v.Values[r-regValue0]))
}

func setSlotField(v *model.Slot, r int, x uint64) {
	switch r {
	case regJob:
		v.Job = uint16(x)
	case regSeq:
		v.Seq = uint32(x)
	case regPriority:
		v.Priority = uint8(x)
	case regBitmap:
		v.Bitmap = uint32(x)
	case regCount:
		v.Count = uint8(x)
	case regState:
		v.State = uint8(x)
	default:
		v.Values[r-regValue0] = int32(uint32(x))
	}
}

func encodeRegister(r int, x uint64) *p4v1.P4Data {
	b := encodeUint(x)
	if registerSpecOf(r).signed {
		b = encodeInt32(int32(uint32(x)))
	}
	return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: b}}
}

func decodeRegister(r int, d *p4v1.P4Data) (uint64, error) {
	spec := registerSpecOf(r)
	b, ok := d.GetData().(*p4v1.P4Data_Bitstring)
	if !ok {
		return 0, invalid("register %s: data must be a bitstring", spec.name)
	}
	if spec.signed {
		v, err := decodeInt32(b.Bitstring)
		if err != nil {
			return 0, invalid("register %s: %v", spec.name, err)
		}
		return uint64(uint32(v)), nil
	}
	v, err := decodeUint(b.Bitstring, int(spec.width))
	if err != nil {
		return 0, invalid("register %s: %v", spec.name, err)
	}
	return v, nil
}

func registerIndex(p *pipeline, e *p4v1.RegisterEntry) (int, int, error) {
	r, ok := p.registerByID[e.GetRegisterId()]
	if !ok {
		return 0, 0, unknownEntity(p, e.GetRegisterId(), "register")
	}
	idx := -1
	if e.GetIndex() != nil {
		i := e.GetIndex().GetIndex()
		if i < 0 || i >= wire.NumSlots {
			return 0, 0, invalid("register %s: index %d outside 0..%d", registerSpecOf(r).name, i, wire.NumSlots-1)
		}
		idx = int(i)
	}
	return r, idx, nil
}

// writeRegister sets one field of a slot (all slots when the index is unset). Writing slot_count 0
// frees a slot.
func (s *P4RuntimeServer) writeRegister(p *pipeline, t p4v1.Update_Type, e *p4v1.RegisterEntry) error {
	if t != p4v1.Update_MODIFY {
		return invalid("register entries can only be modified")
	}
	r, idx, err := registerIndex(p, e)
	if err != nil {
		return err
	}
	x, err := decodeRegister(r, e.GetData())
	if err != nil {
		return err
	}
	lo, hi := idx, idx+1
	if idx < 0 {
		lo, hi = 0, wire.NumSlots
	}
	for i := lo; i < hi; i++ {
		v := s.sw.Slot(i)
		setSlotField(&v, r, x)
		if err := s.sw.SetSlot(i, v); err != nil {
			return invalid("register %s[%d]: %v", registerSpecOf(r).name, i, err)
		}
	}
	return nil
}

func (s *P4RuntimeServer) readRegisters(p *pipeline, e *p4v1.RegisterEntry, emit func(*p4v1.Entity)) error {
	regs := make([]int, 0, numRegisters)
	idx := -1
	if e.GetRegisterId() == 0 {
		for r := range numRegisters {
			regs = append(regs, r)
		}
	} else {
		r, i, err := registerIndex(p, e)
		if err != nil {
			return err
		}
		regs, idx = append(regs, r), i
	}
	lo, hi := idx, idx+1
	if idx < 0 {
		lo, hi = 0, wire.NumSlots
	}
	slots := make([]model.Slot, hi-lo)
	for i := range slots {
		slots[i] = s.sw.Slot(lo + i)
	}
	for _, r := range regs {
		for i := range slots {
			emit(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: p.registerID[r], Index: &p4v1.Index{Index: int64(lo + i)}, Data: encodeRegister(r, slotField(&slots[i], r)),
			}}})
		}
	}
	return nil
}
