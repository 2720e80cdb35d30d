package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// ensureConn returns a live session with st, connecting and pushing the pipeline if the switch
// lacks ours. st.io must be held.
func (c *Controller) ensureConn(ctx context.Context, st *switchState) (*Conn, error) {
	c.mu.Lock()
	conn := st.conn
	c.mu.Unlock()
	if conn != nil && conn.Err() == nil {
		return conn, nil
	}
	if conn != nil {
		conn.Close()
	}
	conn, err := Dial(ctx, st.sc, DialOptions{Timeout: c.dialTimeout()})
	if err != nil {
		c.setErr(st, err)
		return nil, err
	}
	conn.schema = st.schema
	cookie, has, err := conn.PipelineCookie(ctx)
	if err == nil && (!has || cookie != st.cookie) {
		c.log.Info("pushing pipeline", "switch", st.sc.Name, "had_pipeline", has)
		err = conn.SetPipeline(ctx, st.schema, st.devCfg, st.cookie)
		if err == nil {
			c.mu.Lock()
			st.pushes++
			c.mu.Unlock()
		}
	}
	if err != nil {
		conn.Close()
		c.setErr(st, err)
		return nil, err
	}
	slots, slotsErr := c.slotAccess(st, conn)
	c.mu.Lock()
	st.conn, st.slots, st.slotsErr = conn, slots, slotsErr
	st.connects++
	c.mu.Unlock()
	c.log.Info("switch connected", "switch", st.sc.Name, "address", st.sc.Address)
	return conn, nil
}

// clearPending frees the slots of jobs removed while the switch was unreachable. It runs after a
// reconcile has deleted their entries, so no new packet of theirs can claim a slot. st.io must be held.
func (c *Controller) clearPending(ctx context.Context, st *switchState) {
	c.mu.Lock()
	pending := slices.Sorted(maps.Keys(st.pendingClears))
	c.mu.Unlock()
	for _, job := range pending {
		if err := c.clearSlots(ctx, st, job); err != nil {
			c.log.Warn("clearing slots of a removed job", "switch", st.sc.Name, "job", job, "err", err)
		}
	}
}

// slotAccess picks how registers are reached: P4Runtime everywhere except BMv2, whose P4Runtime
// server does not implement registers; there the Thrift CLI is used.
func (c *Controller) slotAccess(st *switchState, conn *Conn) (SlotAccess, error) {
	if st.schema.SlotOwner() == "" {
		return nil, fmt.Errorf("%w: P4Info has no register %q (or %q) and %q", ErrNoSlotAccess,
			RegisterSlotJob, RegisterSlotTag, RegisterSlotCount)
	}
	if st.sc.Target != TargetBMv2 {
		return &p4rtSlots{conn: conn, schema: st.schema, batch: c.batch()}, nil
	}
	thrift := st.sc.ThriftAddress
	if thrift == "" {
		thrift = "127.0.0.1:9090"
	}
	return newCLISlots(thrift, st.schema)
}

// setErr records why the last connection attempt failed, for Status.
func (c *Controller) setErr(st *switchState, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.lastErr = err.Error()
}

// Apply connects to every switch and reconciles it once. Errors of all switches are joined.
func (c *Controller) Apply(ctx context.Context) error {
	var errs []error
	for _, name := range c.order {
		if _, err := c.Reconcile(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run keeps every switch reconciled until ctx ends: it reconnects with exponential backoff when a
// switch goes away (re-pushing the pipeline and state if it lost them), reconciles periodically,
// and polls counters and slots for the metrics.
func (c *Controller) Run(ctx context.Context) {
	done := make(chan struct{})
	for _, name := range c.order {
		go func() {
			c.runSwitch(ctx, c.switches[name])
			done <- struct{}{}
		}()
	}
	go func() {
		c.pollLoop(ctx)
		done <- struct{}{}
	}()
	for range len(c.order) + 1 {
		<-done
	}
	c.Close()
}

func (c *Controller) runSwitch(ctx context.Context, st *switchState) {
	const minBackoff = 100 * time.Millisecond
	maxBackoff := time.Duration(c.cfg.Controller.MaxBackoff)
	if maxBackoff <= 0 {
		maxBackoff = 10 * time.Second
	}
	every := time.Duration(c.cfg.Controller.ReconcileEvery)
	if every <= 0 {
		every = 30 * time.Second
	}
	backoff := minBackoff
	var polled *Conn
	for ctx.Err() == nil {
		if _, err := c.Reconcile(ctx, st.sc.Name); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := backoff/2 + rand.N(backoff/2+1)
			c.log.Warn("switch not in sync; retrying", "switch", st.sc.Name, "in", wait, "err", err)
			backoff = min(2*backoff, maxBackoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		backoff = minBackoff
		c.mu.Lock()
		conn := st.conn
		c.mu.Unlock()
		lost := make(<-chan struct{})
		if conn != nil {
			lost = conn.Done()
		}
		if conn != polled {
			// A new session's counters are read at once, not a poll interval later, so the
			// metrics and the job API have a snapshot as soon as the switch is in sync.
			polled = conn
			c.tryPoll(ctx, st.sc.Name)
		}
		select {
		case <-ctx.Done():
			return
		case <-lost:
			c.log.Warn("switch session lost", "switch", st.sc.Name, "err", conn.Err())
		case <-time.After(every):
		}
	}
}
