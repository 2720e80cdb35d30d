package controlplane

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/antoninbas/p4runtime-go-client/pkg/util/conversion"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// EntityKey identifies an entity the way the switch does: table and match (or the default entry),
// or the multicast group id. Byte values are compared in canonical form, since switches may return
// padded bytestrings.
func EntityKey(e *p4v1.Entity) string {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		te := x.TableEntry
		if te.GetIsDefaultAction() {
			return fmt.Sprintf("t%d/default", te.GetTableId())
		}
		ms := make([]string, 0, len(te.GetMatch()))
		for _, m := range te.GetMatch() {
			ms = append(ms, matchString(m))
		}
		sort.Strings(ms)
		return fmt.Sprintf("t%d/%s/p%d", te.GetTableId(), strings.Join(ms, ","), te.GetPriority())
	case *p4v1.Entity_PacketReplicationEngineEntry:
		if g := x.PacketReplicationEngineEntry.GetMulticastGroupEntry(); g != nil {
			return fmt.Sprintf("mcast/%d", g.GetMulticastGroupId())
		}
	}
	return "other/" + e.String()
}

func matchString(m *p4v1.FieldMatch) string {
	c := func(b []byte) string { return fmt.Sprintf("%x", conversion.ToCanonicalBytestring(b)) }
	switch x := m.GetFieldMatchType().(type) {
	case *p4v1.FieldMatch_Exact_:
		return fmt.Sprintf("%d=%s", m.GetFieldId(), c(x.Exact.GetValue()))
	case *p4v1.FieldMatch_Lpm:
		return fmt.Sprintf("%d=%s/%d", m.GetFieldId(), c(x.Lpm.GetValue()), x.Lpm.GetPrefixLen())
	case *p4v1.FieldMatch_Ternary_:
		return fmt.Sprintf("%d=%s&%s", m.GetFieldId(), c(x.Ternary.GetValue()), c(x.Ternary.GetMask()))
	}
	return fmt.Sprintf("%d=%v", m.GetFieldId(), m)
}

// normalize returns a copy of e holding only what the controller sets, in canonical form, so that
// an entity read back compares equal to the one written.
func normalize(e *p4v1.Entity) *p4v1.Entity {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		te := x.TableEntry
		out := &p4v1.TableEntry{TableId: te.GetTableId(), Priority: te.GetPriority(), IsDefaultAction: te.GetIsDefaultAction()}
		for _, m := range te.GetMatch() {
			m = proto.Clone(m).(*p4v1.FieldMatch)
			switch y := m.GetFieldMatchType().(type) {
			case *p4v1.FieldMatch_Exact_:
				y.Exact.Value = conversion.ToCanonicalBytestring(y.Exact.Value)
			case *p4v1.FieldMatch_Lpm:
				y.Lpm.Value = conversion.ToCanonicalBytestring(y.Lpm.Value)
			}
			out.Match = append(out.Match, m)
		}
		sort.Slice(out.Match, func(i, j int) bool { return out.Match[i].GetFieldId() < out.Match[j].GetFieldId() })
		if a := te.GetAction().GetAction(); a != nil {
			na := &p4v1.Action{ActionId: a.GetActionId()}
			for _, p := range a.GetParams() {
				na.Params = append(na.Params, &p4v1.Action_Param{ParamId: p.GetParamId(), Value: conversion.ToCanonicalBytestring(p.GetValue())})
			}
			sort.Slice(na.Params, func(i, j int) bool { return na.Params[i].ParamId < na.Params[j].ParamId })
			out.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: na}}
		}
		return tableEntity(out)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		if g := x.PacketReplicationEngineEntry.GetMulticastGroupEntry(); g != nil {
			ports := make([]int, 0, len(g.GetReplicas()))
			for _, r := range g.GetReplicas() {
				ports = append(ports, int(r.GetEgressPort()))
			}
			return MulticastEntity(int(g.GetMulticastGroupId()), ports)
		}
	}
	return e
}

// Diff is what to write to turn a switch's actual state into the desired one.
type Diff struct {
	Insert, Modify, Delete []*p4v1.Entity
}

// Empty reports whether the switch already matches.
func (d Diff) Empty() bool { return len(d.Insert)+len(d.Modify)+len(d.Delete) == 0 }

func (d Diff) String() string {
	return fmt.Sprintf("%d insert, %d modify, %d delete", len(d.Insert), len(d.Modify), len(d.Delete))
}

// ComputeDiff compares desired with actual. Default entries are never inserted or deleted, only
// modified. Results are sorted by key so the writes are deterministic.
func ComputeDiff(desired Desired, actual []*p4v1.Entity) Diff {
	have := map[string]*p4v1.Entity{}
	for _, e := range actual {
		have[EntityKey(e)] = normalize(e)
	}
	var d Diff
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		want := normalize(desired[k])
		got, ok := have[k]
		switch {
		case !ok && isDefault(want):
			d.Modify = append(d.Modify, desired[k])
		case !ok:
			d.Insert = append(d.Insert, desired[k])
		case !proto.Equal(want, got):
			d.Modify = append(d.Modify, desired[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := desired[k]; !ok && !isDefault(have[k]) {
			d.Delete = append(d.Delete, have[k])
		}
	}
	return d
}

func isDefault(e *p4v1.Entity) bool { return e.GetTableEntry().GetIsDefaultAction() }

// Updates lists the diff as P4Runtime updates: deletes first (freeing keys and groups), then
// modifies, then inserts.
func (d Diff) Updates() []*p4v1.Update {
	out := make([]*p4v1.Update, 0, len(d.Insert)+len(d.Modify)+len(d.Delete))
	for _, e := range d.Delete {
		out = append(out, &p4v1.Update{Type: p4v1.Update_DELETE, Entity: e})
	}
	for _, e := range d.Modify {
		out = append(out, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e})
	}
	for _, e := range d.Insert {
		out = append(out, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e})
	}
	return out
}

// describe names an entity for error messages: its table and match, or its group.
func (c *Conn) describe(e *p4v1.Entity) string {
	if te := e.GetTableEntry(); te != nil && c.schema != nil {
		if n := c.schema.TableName(te.GetTableId()); n != "" {
			return "table " + n + " " + EntityKey(e)
		}
	}
	return EntityKey(e)
}
