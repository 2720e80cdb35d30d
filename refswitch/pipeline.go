package refswitch

import (
	"fmt"

	p4config "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/inapack/inapack/p4src/wire"
)

// pipeline maps the ids of a pushed P4Info onto the model's entities.
type pipeline struct {
	info *p4config.P4Info

	tableByID map[uint32]tableKind
	tableID   [numTables]uint32
	tableName [numTables]string
	keyIDs    [numTables][]uint32 // in tableSpecs key order

	actionByID map[uint32]actionKind
	actionID   [numActions]uint32 // 0 when the P4Info lacks an optional action (NoAction)
	paramIDs   [numActions][]uint32

	counterByID map[uint32]counterKind
	counterID   [numCounters]uint32
	counterUnit [numCounters]p4config.CounterSpec_Unit

	registerByID map[uint32]int
	registerID   [numRegisters]uint32

	// names of P4Info entities the model does not implement, by id, for error messages
	unimplemented map[uint32]string
}

// bindPipeline checks that info declares every entity the model implements, with the model's
// widths, and returns the id mapping. Its errors name the offending entity.
func bindPipeline(info *p4config.P4Info) (*pipeline, error) {
	if info == nil {
		return nil, fmt.Errorf("the forwarding pipeline config has no P4Info")
	}
	p := &pipeline{
		info:          info,
		tableByID:     map[uint32]tableKind{},
		actionByID:    map[uint32]actionKind{},
		counterByID:   map[uint32]counterKind{},
		registerByID:  map[uint32]int{},
		unimplemented: map[uint32]string{},
	}
	actions := map[uint32]*p4config.Action{}
	for _, a := range info.GetActions() {
		actions[a.GetPreamble().GetId()] = a
		if lastName(a.GetPreamble().GetName()) == actionSpecs[actNoAction].name {
			p.actionID[actNoAction] = a.GetPreamble().GetId()
			p.actionByID[a.GetPreamble().GetId()] = actNoAction
		}
	}
	for k := range numTables {
		if err := p.bindTable(k, info.GetTables(), actions); err != nil {
			return nil, err
		}
	}
	for _, t := range info.GetTables() {
		if _, ok := p.tableByID[t.GetPreamble().GetId()]; !ok {
			p.unimplemented[t.GetPreamble().GetId()] = "table " + t.GetPreamble().GetName()
		}
	}
	if err := p.bindCounters(info.GetCounters()); err != nil {
		return nil, err
	}
	if err := p.bindRegisters(info.GetRegisters()); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pipeline) bindTable(k tableKind, tables []*p4config.Table, actions map[uint32]*p4config.Action) error {
	spec := tableSpecs[k]
	var t *p4config.Table
	for _, c := range tables {
		if lastName(c.GetPreamble().GetName()) != spec.name {
			continue
		}
		if t != nil {
			return fmt.Errorf("P4Info has two tables named %s: %s and %s", spec.name, t.GetPreamble().GetName(), c.GetPreamble().GetName())
		}
		t = c
	}
	if t == nil {
		return fmt.Errorf("P4Info has no table %s, which the reference switch implements", spec.name)
	}
	id := t.GetPreamble().GetId()
	p.tableByID[id], p.tableID[k], p.tableName[k] = k, id, spec.name
	if len(t.GetMatchFields()) != len(spec.keys) {
		return fmt.Errorf("table %s: P4Info has %d match fields, the reference switch implements %d", spec.name, len(t.GetMatchFields()), len(spec.keys))
	}
	for _, ks := range spec.keys {
		var mf *p4config.MatchField
		for _, c := range t.GetMatchFields() {
			if lastName(c.GetName()) == ks.name {
				mf = c
			}
		}
		if mf == nil {
			return fmt.Errorf("table %s: P4Info has no match field %s", spec.name, ks.name)
		}
		if mf.GetBitwidth() != ks.width {
			return fmt.Errorf("table %s: match field %s is %d bits in the P4Info, the reference switch implements %d", spec.name, ks.name, mf.GetBitwidth(), ks.width)
		}
		if mf.GetMatchType() != ks.match {
			return fmt.Errorf("table %s: match field %s is %v in the P4Info, the reference switch implements %v", spec.name, ks.name, mf.GetMatchType(), ks.match)
		}
		p.keyIDs[k] = append(p.keyIDs[k], mf.GetId())
	}
	for _, ak := range spec.actions {
		as := actionSpecs[ak]
		var a *p4config.Action
		for _, ref := range t.GetActionRefs() {
			if c := actions[ref.GetId()]; c != nil && lastName(c.GetPreamble().GetName()) == as.name {
				a = c
			}
		}
		if a == nil {
			return fmt.Errorf("table %s: P4Info lists no action %s for it", spec.name, as.name)
		}
		if err := p.bindAction(ak, a); err != nil {
			return err
		}
	}
	return nil
}

func (p *pipeline) bindAction(k actionKind, a *p4config.Action) error {
	spec := actionSpecs[k]
	id := a.GetPreamble().GetId()
	if p.actionID[k] != 0 {
		if p.actionID[k] != id {
			return fmt.Errorf("P4Info has two actions named %s (ids %d and %d)", spec.name, p.actionID[k], id)
		}
		return nil
	}
	p.actionByID[id], p.actionID[k] = k, id
	if len(a.GetParams()) != len(spec.params) {
		return fmt.Errorf("action %s: P4Info has %d params, the reference switch implements %d", spec.name, len(a.GetParams()), len(spec.params))
	}
	for _, ps := range spec.params {
		var prm *p4config.Action_Param
		for _, c := range a.GetParams() {
			if c.GetName() == ps.name {
				prm = c
			}
		}
		if prm == nil {
			return fmt.Errorf("action %s: P4Info has no param %s", spec.name, ps.name)
		}
		if prm.GetBitwidth() != ps.width {
			return fmt.Errorf("action %s: param %s is %d bits in the P4Info, the reference switch implements %d", spec.name, ps.name, prm.GetBitwidth(), ps.width)
		}
		p.paramIDs[k] = append(p.paramIDs[k], prm.GetId())
	}
	return nil
}

func (p *pipeline) bindCounters(counters []*p4config.Counter) error {
	for k := range numCounters {
		spec := counterSpecs[k]
		for _, c := range counters {
			if lastName(c.GetPreamble().GetName()) != spec.name {
				continue
			}
			if p.counterID[k] != 0 {
				return fmt.Errorf("P4Info has two counters named %s", spec.name)
			}
			if c.GetSize() != spec.size {
				return fmt.Errorf("counter %s: size %d in the P4Info, the reference switch implements %d", spec.name, c.GetSize(), spec.size)
			}
			p.counterID[k] = c.GetPreamble().GetId()
			p.counterByID[c.GetPreamble().GetId()] = k
			p.counterUnit[k] = c.GetSpec().GetUnit()
		}
		if p.counterID[k] == 0 {
			return fmt.Errorf("P4Info has no counter %s, which the reference switch implements", spec.name)
		}
	}
	for _, c := range counters {
		if _, ok := p.counterByID[c.GetPreamble().GetId()]; !ok {
			p.unimplemented[c.GetPreamble().GetId()] = "counter " + c.GetPreamble().GetName()
		}
	}
	return nil
}

func (p *pipeline) bindRegisters(regs []*p4config.Register) error {
	byName := map[string]*p4config.Register{}
	for _, r := range regs {
		n := lastName(r.GetPreamble().GetName())
		if byName[n] != nil {
			return fmt.Errorf("P4Info has two registers named %s", n)
		}
		byName[n] = r
	}
	for i := range numRegisters {
		spec := registerSpecOf(i)
		r := byName[spec.name]
		if r == nil {
			return fmt.Errorf("P4Info has no register %s, which the reference switch implements", spec.name)
		}
		if r.GetSize() != wire.NumSlots {
			return fmt.Errorf("register %s: size %d in the P4Info, the reference switch implements %d", spec.name, r.GetSize(), wire.NumSlots)
		}
		bs := r.GetTypeSpec().GetBitstring()
		width, signed := bs.GetBit().GetBitwidth(), false
		if bs.GetInt() != nil {
			width, signed = bs.GetInt().GetBitwidth(), true
		}
		if width != spec.width || signed != spec.signed {
			return fmt.Errorf("register %s: type %s in the P4Info, the reference switch implements %s", spec.name, typeName(width, signed), typeName(spec.width, spec.signed))
		}
		p.registerID[i] = r.GetPreamble().GetId()
		p.registerByID[r.GetPreamble().GetId()] = i
	}
	for _, r := range regs {
		if _, ok := p.registerByID[r.GetPreamble().GetId()]; !ok {
			p.unimplemented[r.GetPreamble().GetId()] = "register " + r.GetPreamble().GetName()
		}
	}
	return nil
}

func typeName(width int32, signed bool) string {
	if signed {
		return fmt.Sprintf("int<%d>", width)
	}
	return fmt.Sprintf("bit<%d>", width)
}
