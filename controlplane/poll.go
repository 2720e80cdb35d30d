package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Snapshot is one reading of a switch's counters and slot registers.
type Snapshot struct {
	Time      time.Time                 `json:"time"`
	Events    map[string]uint64         `json:"events"`               // ina_events, packets
	JobEvents map[int]map[string]uint64 `json:"job_events"`           // ina_job_events, packets
	SlotsHeld map[int]int               `json:"slots_held,omitempty"` // job -> slots it holds
	SlotsErr  string                    `json:"slots_error,omitempty"`
}

// Poll reads the switch's counters for every job it carries, and its slot registers.
func (c *Controller) Poll(ctx context.Context, name string) (*Snapshot, error) {
	st := c.switches[name]
	if st == nil {
		return nil, fmt.Errorf("unknown switch %q", name)
	}
	st.io.Lock()
	defer st.io.Unlock()
	c.mu.Lock()
	conn, slots, slotsErr := st.conn, st.slots, st.slotsErr
	var jobs []int
	for _, j := range c.cfg.Jobs {
		for _, js := range j.Switches {
			if js.Switch == name {
				jobs = append(jobs, j.ID)
			}
		}
	}
	c.mu.Unlock()
	if conn == nil || conn.Err() != nil {
		return nil, fmt.Errorf("switch %s (%s): not connected", name, st.sc.Address)
	}
	snap, err := readCounters(ctx, conn, st.schema, jobs)
	if err != nil {
		return nil, err
	}
	if slots == nil {
		snap.SlotsErr = errString(slotsErr)
	} else if sj, sc, err := slots.ReadSlots(ctx); err != nil {
		snap.SlotsErr = err.Error()
	} else {
		snap.SlotsHeld = map[int]int{}
		for i, j := range sj {
			if i < len(sc) && sc[i] != 0 {
				snap.SlotsHeld[int(j)]++
			}
		}
	}
	c.mu.Lock()
	st.snapshot = snap
	c.mu.Unlock()
	return snap, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func counterEntity(id uint32, index int64) *p4v1.Entity {
	ce := &p4v1.CounterEntry{CounterId: id}
	if index >= 0 {
		ce.Index = &p4v1.Index{Index: index}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: ce}}
}

// readCounters reads ina_events whole and, for each job, its NUM_EVENTS cells of ina_job_events
// (JobEventStride apart),
// all in one ReadRequest. Where the P4Info has the TNA build's per-gress counters, they are read
// in the same request and added in (egress's events to the same event, ina_job_evicted[job] to
// the job's evicted).
func readCounters(ctx context.Context, conn *Conn, s *Schema, jobs []int) (*Snapshot, error) {
	id := func(name string) uint32 { return s.Counter(name).GetPreamble().GetId() } // 0 if absent
	global, perJob := map[uint32]bool{id(CounterEvents): true}, map[uint32]bool{id(CounterJobEvents): true}
	if eg := id(CounterEgressEvents); eg != 0 {
		global[eg] = true
	}
	if eg := id(CounterJobEgressEvents); eg != 0 {
		perJob[eg] = true
	}
	evicted, stride := id(CounterJobEvicted), s.JobEventStride()
	var q []*p4v1.Entity
	for g := range global {
		q = append(q, counterEntity(g, -1))
	}
	for _, j := range jobs {
		for pj := range perJob {
			for e := range wire.NumEvents {
				q = append(q, counterEntity(pj, int64(j)*stride+int64(e)))
			}
		}
		if evicted != 0 {
			q = append(q, counterEntity(evicted, int64(j)))
		}
	}
	ents, err := conn.Read(ctx, q...)
	if err != nil {
		return nil, fmt.Errorf("counters: %w", err)
	}
	snap := &Snapshot{Time: time.Now(), Events: map[string]uint64{}, JobEvents: map[int]map[string]uint64{}}
	for _, j := range jobs {
		snap.JobEvents[j] = map[string]uint64{}
	}
	for _, e := range ents {
		ce := e.GetCounterEntry()
		idx, n := ce.GetIndex().GetIndex(), uint64(ce.GetData().GetPacketCount())
		switch cid := ce.GetCounterId(); {
		case global[cid]:
			if idx >= 0 && idx < int64(wire.NumEvents) {
				snap.Events[wire.Event(idx).String()] += n
			}
		case perJob[cid]:
			j, ev := int(idx/stride), wire.Event(idx%stride)
			if m, ok := snap.JobEvents[j]; ok && ev < wire.NumEvents {
				m[ev.String()] += n
			}
		case cid == evicted && evicted != 0:
			if m, ok := snap.JobEvents[int(idx)]; ok {
				m[wire.EventEvicted.String()] += n
			}
		}
	}
	return snap, nil
}

func (c *Controller) pollInterval() time.Duration {
	if d := time.Duration(c.cfg.Controller.PollInterval); d > 0 {
		return d
	}
	return 5 * time.Second
}

func (c *Controller) pollLoop(ctx context.Context) {
	t := time.NewTicker(c.pollInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.PollAll(ctx)
	}
}

// PollAll polls every switch now; a switch that cannot be read keeps its last snapshot (Status
// tells when it was taken).
func (c *Controller) PollAll(ctx context.Context) {
	for _, name := range c.order {
		c.tryPoll(ctx, name)
	}
}

// tryPoll is Poll for the controller's own loops, which have no caller to return an error to.
func (c *Controller) tryPoll(ctx context.Context, name string) {
	if _, err := c.Poll(ctx, name); err != nil && !errors.Is(err, context.Canceled) {
		c.log.Debug("poll", "switch", name, "err", err)
	}
}

// SwitchStatus is the controller's view of one switch.
type SwitchStatus struct {
	Name           string    `json:"name"`
	Address        string    `json:"address"`
	Target         string    `json:"target"`
	Connected      bool      `json:"connected"`
	LastError      string    `json:"last_error,omitempty"`
	LastDiff       string    `json:"last_diff,omitempty"`
	Connects       int       `json:"connects"`
	PipelinePushes int       `json:"pipeline_pushes"`
	Reconciles     int       `json:"reconciles"`
	EntriesWritten int       `json:"entries_written"`
	Snapshot       *Snapshot `json:"snapshot,omitempty"`
}

// Status reports every switch, with its latest counter snapshot.
func (c *Controller) Status() []SwitchStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SwitchStatus, 0, len(c.order))
	for _, n := range c.order {
		st := c.switches[n]
		out = append(out, SwitchStatus{
			Name: n, Address: st.sc.Address, Target: st.sc.Target,
			Connected: st.conn != nil && st.conn.Err() == nil, LastError: st.lastErr, LastDiff: st.lastDiff,
			Connects: st.connects, PipelinePushes: st.pushes, Reconciles: st.reconciles, EntriesWritten: st.written,
			Snapshot: st.snapshot,
		})
	}
	return out
}
