// Package trace loads GPU-cluster job traces (CSV, Philly, Alibaba PAI) and generates synthetic ones.
package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Job is one training job as a trace records it: when it was submitted, how many GPUs it asked
// for and how long it ran on the trace's own hardware (no queueing).
type Job struct {
	ID       string
	Submit   float64 // seconds from the trace's start
	GPUs     int
	Duration float64 // seconds of run time
}

// Trace is a list of jobs sorted by submit time, plus what the loader had to leave out.
type Trace struct {
	Jobs []Job
	// Skipped counts malformed rows dropped under Options.SkipBad.
	Skipped int
	// Incomplete counts well-formed records that describe no finished run (a job still running,
	// a Philly job without attempts); they are left out whatever the options.
	Incomplete int
}

// Options controls how loaders treat bad input.
type Options struct {
	// SkipBad drops malformed rows and counts them in Trace.Skipped instead of failing.
	SkipBad bool
}

// ParseError locates a malformed record: Line is 1-based (for JSON, the index of the record + 1).
type ParseError struct {
	Line  int
	Field string
	Err   error
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: field %s: %v", e.Line, e.Field, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Limits on what a row may say; they keep hostile input from producing absurd simulations.
const (
	MaxGPUs     = 1 << 16
	MaxDuration = 1e9 // seconds, ~31 years
	MaxSubmit   = 1e10
)

var (
	errRange    = errors.New("out of range")
	errNotFound = errors.New("missing")
)

// validate checks one job's fields, returning the offending field name.
func validate(j Job) (string, error) {
	switch {
	case j.ID == "":
		return "job_id", errNotFound
	case !(j.Submit >= 0 && j.Submit <= MaxSubmit):
		return "submit_time_s", fmt.Errorf("%w: %v", errRange, j.Submit)
	case j.GPUs < 1 || j.GPUs > MaxGPUs:
		return "num_gpus", fmt.Errorf("%w: %d", errRange, j.GPUs)
	case !(j.Duration > 0 && j.Duration <= MaxDuration):
		return "duration_s", fmt.Errorf("%w: %v", errRange, j.Duration)
	}
	return "", nil
}

// sortJobs orders jobs by submit time, then ID, so every loader yields the same order for the
// same jobs whatever the file order.
func sortJobs(js []Job) {
	sort.SliceStable(js, func(a, b int) bool {
		if js[a].Submit != js[b].Submit {
			return js[a].Submit < js[b].Submit
		}
		return js[a].ID < js[b].ID
	})
}

// Rebase shifts submit times so the first job arrives at t = 0.
func (t *Trace) Rebase() {
	if len(t.Jobs) == 0 {
		return
	}
	t0 := t.Jobs[0].Submit
	for i := range t.Jobs {
		t.Jobs[i].Submit -= t0
	}
}

// Span is the time between the first and the last submission.
func (t *Trace) Span() float64 {
	if len(t.Jobs) == 0 {
		return 0
	}
	return t.Jobs[len(t.Jobs)-1].Submit - t.Jobs[0].Submit
}

// OfferedLoad is the trace's GPU-time over the GPU-time of a cluster of gpus GPUs during the
// arrival window (first to last submission): the utilisation it would cause if jobs ran at the
// speed the trace recorded. 0 for a trace spanning no time.
func (t *Trace) OfferedLoad(gpus int) float64 {
	span := t.Span()
	if span <= 0 || gpus <= 0 {
		return 0
	}
	w := 0.0
	for _, j := range t.Jobs {
		w += float64(j.GPUs) * j.Duration
	}
	return w / (float64(gpus) * span)
}

// Scaled is a copy with every submission time multiplied by f (f < 1 compresses arrivals, which
// raises the offered load by 1/f); durations are unchanged.
func (t *Trace) Scaled(f float64) *Trace {
	c := &Trace{Jobs: append([]Job(nil), t.Jobs...), Skipped: t.Skipped, Incomplete: t.Incomplete}
	t0 := 0.0
	if len(c.Jobs) > 0 {
		t0 = c.Jobs[0].Submit
	}
	for i := range c.Jobs {
		c.Jobs[i].Submit = t0 + (c.Jobs[i].Submit-t0)*f
	}
	return c
}

// Jittered is a copy with every submission time moved by an independent uniform draw in
// [-sec, +sec] (never before the first submission), re-sorted: the order of arrivals within a few
// minutes of each other is incidental to a trace, so each seed is another plausible week with the
// same jobs. Deterministic per seed; sec <= 0 returns an unchanged copy.
func (t *Trace) Jittered(sec float64, seed uint64) *Trace {
	c := &Trace{Jobs: append([]Job(nil), t.Jobs...), Skipped: t.Skipped, Incomplete: t.Incomplete}
	if sec <= 0 || len(c.Jobs) == 0 {
		return c
	}
	t0 := c.Jobs[0].Submit
	rng := rand.New(rand.NewPCG(seed, 0x6a69747465720000)) // "jitter"
	for i := range c.Jobs {
		c.Jobs[i].Submit = math.Max(t0, c.Jobs[i].Submit+(2*rng.Float64()-1)*sec)
	}
	sortJobs(c.Jobs)
	return c
}
