package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/antoninbas/p4runtime-go-client/pkg/util/conversion"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// ErrUnknownJob is returned for a job id the controller does not manage.
var ErrUnknownJob = errors.New("unknown job")

// ErrJobExists is returned when adding a job id already in use.
var ErrJobExists = errors.New("job already exists")

// Jobs returns the jobs in the desired state.
func (c *Controller) Jobs() []JobConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.cfg.Jobs)
}

// AddJob validates j against the current state and installs its entries on every switch it spans.
// The job stays in the desired state even if a switch is unreachable; it is installed there on
// reconnect. The returned error names the switches that failed.
func (c *Controller) AddJob(ctx context.Context, j JobConfig) error {
	c.jobMu.Lock()
	defer c.jobMu.Unlock()
	c.mu.Lock()
	if c.cfg.Job(j.ID) != nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrJobExists, j.ID)
	}
	next := *c.cfg
	next.Jobs = append(slices.Clone(c.cfg.Jobs), j)
	return c.commitLocked(ctx, &next, j.ID)
}

// commitLocked validates next against the whole state, makes it the desired state, saves it and
// writes job id's entries to the switches it spans. c.mu must be held; commitLocked releases it
// before any I/O with a switch.
func (c *Controller) commitLocked(ctx context.Context, next *Config, id int) error {
	if err := next.Validate(); err != nil {
		c.mu.Unlock()
		return err
	}
	c.cfg = next
	serr := c.saveState()
	c.mu.Unlock()
	return errors.Join(serr, c.applyJob(ctx, id, nil))
}

// UpdateJob changes a job's priority cap and/or INA switch (nil leaves a field unchanged) and
// rewrites its ina_worker entries.
func (c *Controller) UpdateJob(ctx context.Context, id int, priorityCap *int, ina *bool) error {
	c.jobMu.Lock()
	defer c.jobMu.Unlock()
	c.mu.Lock()
	old := c.cfg.Job(id)
	if old == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrUnknownJob, id)
	}
	j := *old
	if priorityCap != nil {
		j.PriorityCap = priorityCap
	}
	if ina != nil {
		j.INA = ina
	}
	next := *c.cfg
	next.Jobs = slices.Clone(c.cfg.Jobs)
	for i := range next.Jobs {
		if next.Jobs[i].ID == id {
			next.Jobs[i] = j
		}
	}
	return c.commitLocked(ctx, &next, id)
}

// RemoveJob deletes the job's entries on every switch it spans and then frees every slot it still
// holds there; entries and slots of other jobs are not touched. A switch that is unreachable gets its
// slots cleared when it comes back.
func (c *Controller) RemoveJob(ctx context.Context, id int) error {
	c.jobMu.Lock()
	defer c.jobMu.Unlock()
	c.mu.Lock()
	old := c.cfg.Job(id)
	if old == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrUnknownJob, id)
	}
	removed := *old
	next := *c.cfg
	next.Jobs = slices.DeleteFunc(slices.Clone(c.cfg.Jobs), func(j JobConfig) bool { return j.ID == id })
	c.cfg = &next
	for _, js := range removed.Switches {
		if st := c.switches[js.Switch]; st != nil {
			st.pendingClears[id] = true
		}
	}
	serr := c.saveState()
	c.mu.Unlock()
	return errors.Join(serr, c.applyJob(ctx, id, &removed))
}

// applyJob makes the job's entries on each switch it spans (now, or before removal) match the
// desired state, reading and diffing only that job's entries, then clears slots if it was removed.
func (c *Controller) applyJob(ctx context.Context, id int, removed *JobConfig) error {
	c.mu.Lock()
	j := c.cfg.Job(id)
	var spans []string
	for _, src := range []*JobConfig{j, removed} {
		if src == nil {
			continue
		}
		for _, js := range src.Switches {
			if !slices.Contains(spans, js.Switch) {
				spans = append(spans, js.Switch)
			}
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, sw := range spans {
		if err := c.applyJobOn(ctx, c.switches[sw], id, removed); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) applyJobOn(ctx context.Context, st *switchState, id int, removed *JobConfig) error {
	st.io.Lock()
	defer st.io.Unlock()
	conn, err := c.ensureConn(ctx, st)
	if err != nil {
		return err
	}
	c.mu.Lock()
	desired := Desired{}
	groups := map[uint32]bool{}
	var buildErr error
	for _, src := range []*JobConfig{c.cfg.Job(id), removed} {
		if src == nil {
			continue
		}
		for k := range src.Switches {
			js := &src.Switches[k]
			if js.Switch != st.sc.Name {
				continue
			}
			if js.Result != nil {
				groups[uint32(js.Result.MulticastGroup)] = true
			}
			if src == removed {
				continue
			}
			es, err := st.schema.JobEntities(src, js)
			if err != nil {
				buildErr = err
			}
			for _, e := range es {
				desired[EntityKey(e)] = e
			}
		}
	}
	c.mu.Unlock()
	if buildErr != nil {
		return buildErr
	}
	actual, mcastOK, err := readState(ctx, conn, st.schema)
	if err != nil {
		return err
	}
	mine := st.schema.jobFilter(id, groups)
	var scoped []*p4v1.Entity
	for _, e := range actual {
		if mine(e) {
			scoped = append(scoped, e)
		}
	}
	if !mcastOK {
		_, err = c.writeBlindGroups(ctx, conn, desired, scoped)
	} else {
		d := ComputeDiff(desired, scoped)
		c.log.Info("job update", "switch", st.sc.Name, "job", id, "diff", d.String())
		err = conn.Write(ctx, d.Updates(), c.batch())
	}
	if err != nil || removed == nil {
		return err
	}
	if err := c.clearSlots(ctx, st, id); err != nil {
		return fmt.Errorf("switch %s: job %d entries removed, but its slots were not cleared: %w", st.sc.Name, id, err)
	}
	return nil
}

// jobFilter matches the entities that belong to job id: ina_job, ina_ps and ina_unicast entries
// keyed by it, and its multicast groups.
func (s *Schema) jobFilter(id int, groups map[uint32]bool) func(*p4v1.Entity) bool {
	fields := map[uint32]uint32{
		s.tableID(TableJob): s.field(s.tables[TableJob], "job_id").GetId(),
		s.tableID(TablePS):  s.field(s.tables[TablePS], "job_id").GetId(),
	}
	if s.HasUnicast() {
		fields[s.tableID(TableUnicast)] = s.field(s.tables[TableUnicast], "job_id").GetId()
	}
	want := canon(uint64(id))
	return func(e *p4v1.Entity) bool {
		if g := e.GetPacketReplicationEngineEntry().GetMulticastGroupEntry(); g != nil {
			return groups[g.GetMulticastGroupId()]
		}
		te := e.GetTableEntry()
		fid, ok := fields[te.GetTableId()]
		if !ok || te.GetIsDefaultAction() {
			return false
		}
		for _, m := range te.GetMatch() {
			if m.GetFieldId() == fid {
				return bytes.Equal(conversion.ToCanonicalBytestring(m.GetExact().GetValue()), want)
			}
		}
		return false
	}
}

// clearSlots frees every slot job still holds on the switch; st.io must be held.
func (c *Controller) clearSlots(ctx context.Context, st *switchState, job int) error {
	c.mu.Lock()
	slots, slotsErr := st.slots, st.slotsErr
	c.mu.Unlock()
	if slots == nil {
		return slotsErr
	}
	jobs, counts, err := slots.ReadSlots(ctx)
	if err != nil {
		return err
	}
	idx := SlotsOf(jobs, counts, job)
	if len(idx) > 0 {
		c.log.Info("clearing slots", "switch", st.sc.Name, "job", job, "slots", len(idx))
		if err := slots.ResetSlots(ctx, idx); err != nil {
			return err
		}
	}
	c.mu.Lock()
	delete(st.pendingClears, job)
	c.mu.Unlock()
	return nil
}
