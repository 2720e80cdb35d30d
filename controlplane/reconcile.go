package controlplane

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// readState reads every entity the controller owns from the switch. mcastOK is false when the
// switch cannot read multicast groups (then they are written without a diff).
func readState(ctx context.Context, conn *Conn, s *Schema) (ents []*p4v1.Entity, mcastOK bool, err error) {
	var q []*p4v1.Entity
	for _, t := range s.ownedTables() {
		q = append(q, tableEntity(&p4v1.TableEntry{TableId: s.tableID(t)}))
	}
	ents, err = conn.Read(ctx, q...)
	if err != nil {
		return nil, false, err
	}
	// Reading a default entry is newer than the rest of the API; a switch that cannot is simply
	// always rewritten.
	if d, err := conn.Read(ctx, tableEntity(&p4v1.TableEntry{TableId: s.tableID(TableSettings), IsDefaultAction: true})); err == nil {
		ents = append(ents, d...)
	}
	groups, err := conn.Read(ctx, MulticastEntity(0, nil))
	if err != nil {
		// status.Code sees through the wrapping Read adds.
		if status.Code(err) == codes.Unimplemented || status.Code(err) == codes.InvalidArgument {
			return ents, false, nil
		}
		return nil, false, err
	}
	return append(ents, groups...), true, nil
}

// Reconcile brings one switch to the desired state: connect if needed, read what it has, and write
// the difference in batches. Running it again without changes writes nothing.
func (c *Controller) Reconcile(ctx context.Context, name string) (Diff, error) {
	st := c.switches[name]
	if st == nil {
		return Diff{}, fmt.Errorf("unknown switch %q", name)
	}
	st.io.Lock()
	defer st.io.Unlock()
	d, err := c.reconcileLocked(ctx, st)
	c.mu.Lock()
	st.reconciles++
	if err == nil {
		st.lastErr = ""
		st.lastDiff = d.String()
		st.written += len(d.Insert) + len(d.Modify) + len(d.Delete)
	} else {
		st.lastErr = err.Error()
	}
	c.mu.Unlock()
	return d, err
}

func (c *Controller) reconcileLocked(ctx context.Context, st *switchState) (Diff, error) {
	conn, err := c.ensureConn(ctx, st)
	if err != nil {
		return Diff{}, err
	}
	c.mu.Lock()
	desired, err := st.schema.DesiredState(c.cfg, st.sc.Name)
	c.mu.Unlock()
	if err != nil {
		return Diff{}, err
	}
	actual, mcastOK, err := readState(ctx, conn, st.schema)
	if err != nil {
		return Diff{}, err
	}
	var d Diff
	if mcastOK {
		d = ComputeDiff(desired, actual)
		if !d.Empty() {
			c.log.Info("reconciling", "switch", st.sc.Name, "diff", d.String())
			err = conn.Write(ctx, d.Updates(), c.batch())
		}
	} else {
		d, err = c.writeBlindGroups(ctx, conn, desired, actual)
	}
	if err == nil {
		c.clearPending(ctx, st)
	}
	return d, err
}

// writeBlindGroups reconciles tables by diff and writes each desired multicast group with INSERT,
// falling back to MODIFY when it exists, for switches that cannot read groups back.
func (c *Controller) writeBlindGroups(ctx context.Context, conn *Conn, desired Desired, actual []*p4v1.Entity) (Diff, error) {
	tables := Desired{}
	var groups []*p4v1.Entity
	for k, e := range desired {
		if e.GetPacketReplicationEngineEntry() != nil {
			groups = append(groups, e)
		} else {
			tables[k] = e
		}
	}
	d := ComputeDiff(tables, actual)
	if err := conn.Write(ctx, d.Updates(), c.batch()); err != nil {
		return d, err
	}
	for _, g := range groups {
		err := conn.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_INSERT, Entity: g}}, 1)
		if err != nil {
			err = conn.Write(ctx, []*p4v1.Update{{Type: p4v1.Update_MODIFY, Entity: g}}, 1)
		}
		if err != nil {
			return d, err
		}
		d.Modify = append(d.Modify, g)
	}
	return d, nil
}
