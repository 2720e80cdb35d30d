package refswitch

import (
	"net/netip"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/inapack/inapack/p4src/model"
)

// tableOp is a decoded table entry: which table, its key and (unless deleting) its action.
type tableOp struct {
	table  tableKind
	deflt  bool
	keys   []uint64 // in tableSpecs key order; for ipv4_lpm the address
	prefix int      // ipv4_lpm prefix length
	action actionKind
	params []uint64 // in actionSpecs param order
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// decodeTableEntry checks e against the pipeline. needAction is false for DELETE and reads.
func (p *pipeline) decodeTableEntry(e *p4v1.TableEntry, needAction bool) (*tableOp, error) {
	k, ok := p.tableByID[e.GetTableId()]
	if !ok {
		if n, ok := p.unimplemented[e.GetTableId()]; ok {
			return nil, status.Errorf(codes.Unimplemented, "%s is not implemented by the reference switch", n)
		}
		return nil, status.Errorf(codes.NotFound, "unknown table id %d", e.GetTableId())
	}
	name := p.tableName[k]
	op := &tableOp{table: k, deflt: e.GetIsDefaultAction()}
	if e.GetPriority() != 0 {
		return nil, invalid("table %s: priority must be 0 (the table has no ternary or range key)", name)
	}
	if op.deflt && len(e.GetMatch()) > 0 {
		return nil, invalid("table %s: a default entry has no match fields", name)
	}
	if !op.deflt {
		if err := p.decodeKeys(op, e.GetMatch()); err != nil {
			return nil, err
		}
	}
	if !needAction && e.GetAction() == nil {
		return op, nil
	}
	a := e.GetAction().GetAction()
	if a == nil {
		return nil, invalid("table %s: the entry needs a direct action (action profiles are not implemented)", name)
	}
	ak, ok := p.actionByID[a.GetActionId()]
	if !ok || !p.tableAllows(k, ak, op.deflt) {
		return nil, invalid("table %s: action id %d is not an action of this table", name, a.GetActionId())
	}
	op.action = ak
	params, err := p.decodeParams(ak, a.GetParams())
	if err != nil {
		return nil, err
	}
	op.params = params
	return op, nil
}

// tableAllows reports whether action a may be used for an entry (or the default entry) of table k.
func (p *pipeline) tableAllows(k tableKind, a actionKind, deflt bool) bool {
	for _, c := range tableSpecs[k].actions {
		if c == a {
			return true
		}
	}
	return deflt && a == actNoAction && (k == tableJob || k == tablePS || k == tableUnicast)
}

func (p *pipeline) decodeKeys(op *tableOp, match []*p4v1.FieldMatch) error {
	spec := tableSpecs[op.table]
	name := p.tableName[op.table]
	op.keys = make([]uint64, len(spec.keys))
	seen := make([]bool, len(spec.keys))
	for _, m := range match {
		i := -1
		for j, id := range p.keyIDs[op.table] {
			if id == m.GetFieldId() {
				i = j
			}
		}
		if i < 0 {
			return invalid("table %s: unknown match field id %d", name, m.GetFieldId())
		}
		if seen[i] {
			return invalid("table %s: match field %s given twice", name, spec.keys[i].name)
		}
		seen[i] = true
		ks := spec.keys[i]
		switch fm := m.GetFieldMatchType().(type) {
		case *p4v1.FieldMatch_Exact_:
			if ks.match != exactMatch {
				return invalid("table %s: match field %s is not exact", name, ks.name)
			}
			v, err := decodeUint(fm.Exact.GetValue(), int(ks.width))
			if err != nil {
				return invalid("table %s: match field %s: %v", name, ks.name, err)
			}
			op.keys[i] = v
		case *p4v1.FieldMatch_Lpm:
			if ks.match != lpmMatch {
				return invalid("table %s: match field %s is not lpm", name, ks.name)
			}
			v, err := decodeUint(fm.Lpm.GetValue(), int(ks.width))
			if err != nil {
				return invalid("table %s: match field %s: %v", name, ks.name, err)
			}
			pl := int(fm.Lpm.GetPrefixLen())
			if pl <= 0 || pl > int(ks.width) {
				return invalid("table %s: match field %s: prefix length %d outside 1..%d (omit the field for a /0 match)", name, ks.name, pl, ks.width)
			}
			if v&(1<<(int(ks.width)-pl)-1) != 0 {
				return invalid("table %s: match field %s: value %#x has bits set beyond its /%d prefix", name, ks.name, v, pl)
			}
			op.keys[i], op.prefix = v, pl
		default:
			return invalid("table %s: match field %s: match kind %T is not implemented", name, ks.name, fm)
		}
	}
	for i, ks := range spec.keys {
		if !seen[i] && ks.match != lpmMatch {
			return invalid("table %s: exact match field %s is missing", name, ks.name)
		}
	}
	return nil
}

func (p *pipeline) decodeParams(a actionKind, params []*p4v1.Action_Param) ([]uint64, error) {
	spec := actionSpecs[a]
	if len(params) != len(spec.params) {
		return nil, invalid("action %s: %d params given, it takes %d", spec.name, len(params), len(spec.params))
	}
	out := make([]uint64, len(spec.params))
	seen := make([]bool, len(spec.params))
	for _, prm := range params {
		i := -1
		for j, id := range p.paramIDs[a] {
			if id == prm.GetParamId() {
				i = j
			}
		}
		if i < 0 || seen[i] {
			return nil, invalid("action %s: unknown or repeated param id %d", spec.name, prm.GetParamId())
		}
		seen[i] = true
		v, err := decodeUint(prm.GetValue(), int(spec.params[i].width))
		if err != nil {
			return nil, invalid("action %s: param %s: %v", spec.name, spec.params[i].name, err)
		}
		out[i] = v
	}
	return out, nil
}

// encodeTableEntry is the P4Runtime form of a decoded entry.
func (p *pipeline) encodeTableEntry(op *tableOp) *p4v1.TableEntry {
	e := &p4v1.TableEntry{TableId: p.tableID[op.table], IsDefaultAction: op.deflt}
	if !op.deflt {
		for i, ks := range tableSpecs[op.table].keys {
			fm := &p4v1.FieldMatch{FieldId: p.keyIDs[op.table][i]}
			if ks.match == lpmMatch {
				if op.prefix == 0 {
					continue // a /0 match is the field's absence
				}
				fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: encodeUint(op.keys[i]), PrefixLen: int32(op.prefix)}}
			} else {
				fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: encodeUint(op.keys[i])}}
			}
			e.Match = append(e.Match, fm)
		}
	}
	a := &p4v1.Action{ActionId: p.actionID[op.action]}
	for i, v := range op.params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: p.paramIDs[op.action][i], Value: encodeUint(v)})
	}
	e.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return e
}

// Conversions between decoded entries and the model's records.

func (op *tableOp) route() model.Route {
	addr := netip.AddrFrom4([4]byte{byte(op.keys[0] >> 24), byte(op.keys[0] >> 16), byte(op.keys[0] >> 8), byte(op.keys[0])})
	r := model.Route{Prefix: netip.PrefixFrom(addr, op.prefix)}
	if op.params != nil {
		r.DstMAC = mac(op.params[0])
		r.Port = uint16(op.params[1])
	}
	return r
}

func routeOp(r model.Route) *tableOp {
	a := r.Prefix.Addr().As4()
	return &tableOp{
		table:  tableIPv4LPM,
		keys:   []uint64{uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3])},
		prefix: r.Prefix.Bits(),
		action: actIPv4Forward,
		params: []uint64{macUint(r.DstMAC), uint64(r.Port)},
	}
}

func (op *tableOp) jobKey() model.JobKey {
	return model.JobKey{Job: uint16(op.keys[0]), Port: uint16(op.keys[1]), Member: uint8(op.keys[2])}
}

func (op *tableOp) jobEntry() (model.JobEntry, error) {
	switch op.action {
	case actWorker:
		return model.JobEntry{Role: model.RoleWorker, WorkerBit: uint32(op.params[0]), FanIn: uint8(op.params[1]),
			PriorityCap: uint8(op.params[2]), INAEnabled: op.params[3] != 0}, nil
	case actResult:
		return model.JobEntry{Role: model.RoleResult, McastGroup: uint16(op.params[0])}, nil
	case actTransit:
		return model.JobEntry{Role: model.RoleTransit}, nil
	}
	return model.JobEntry{}, invalid("table ina_job: action %s cannot be an entry's action", actionSpecs[op.action].name)
}

func jobOp(k model.JobKey, e model.JobEntry) *tableOp {
	op := &tableOp{table: tableJob, keys: []uint64{uint64(k.Job), uint64(k.Port), uint64(k.Member)}}
	switch e.Role {
	case model.RoleWorker:
		b := uint64(0)
		if e.INAEnabled {
			b = 1
		}
		op.action, op.params = actWorker, []uint64{uint64(e.WorkerBit), uint64(e.FanIn), uint64(e.PriorityCap), b}
	case model.RoleResult:
		op.action, op.params = actResult, []uint64{uint64(e.McastGroup)}
	default:
		op.action = actTransit
	}
	return op
}

func (op *tableOp) psEntry() model.PSEntry {
	ip := op.params[2]
	return model.PSEntry{Port: uint16(op.params[0]), MAC: mac(op.params[1]), IP: [4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}}
}

func psOp(job uint16, e model.PSEntry) *tableOp {
	ip := uint64(e.IP[0])<<24 | uint64(e.IP[1])<<16 | uint64(e.IP[2])<<8 | uint64(e.IP[3])
	return &tableOp{table: tablePS, keys: []uint64{uint64(job)}, action: actSetPS, params: []uint64{uint64(e.Port), macUint(e.MAC), ip}}
}

func (op *tableOp) unicastKey() model.UnicastKey {
	return model.UnicastKey{Job: uint16(op.keys[0]), Bitmap: uint32(op.keys[1])}
}

func unicastOp(k model.UnicastKey, port uint16) *tableOp {
	return &tableOp{table: tableUnicast, keys: []uint64{uint64(k.Job), uint64(k.Bitmap)}, action: actUnicastPort, params: []uint64{uint64(port)}}
}

func (op *tableOp) settings() model.Settings {
	return model.Settings{Preempt: op.params[0] != 0, ReleaseOnResult: op.params[1] != 0,
		ECNThreshold: uint32(op.params[2]), ActiveSlots: uint16(op.params[3])}
}

func settingsOp(v model.Settings) *tableOp {
	b := func(x bool) uint64 {
		if x {
			return 1
		}
		return 0
	}
	return &tableOp{table: tableSettings, deflt: true, action: actSetSettings,
		params: []uint64{b(v.Preempt), b(v.ReleaseOnResult), uint64(v.ECNThreshold), uint64(v.ActiveSlots)}}
}

func mac(v uint64) [6]byte {
	return [6]byte{byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

func macUint(m [6]byte) uint64 {
	var v uint64
	for _, c := range m {
		v = v<<8 | uint64(c)
	}
	return v
}
