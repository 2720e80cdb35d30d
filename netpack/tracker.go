package netpack

import (
	"slices"
	"sort"
)

// tracker keeps an Estimator in step with a State: through the state's change journal when it
// is the state seen last time, else by comparing every running job. NetPack's placer and the
// knapsack admission each keep one, so a call costs the changes, not the cluster.
type tracker struct {
	mode    Mode
	full    bool // re-fill the whole cluster on every change (tests, ablation)
	est     *Estimator
	st      *State   // the state est mirrors
	gen     uint64   // st's generation est has caught up with
	pending []string // jobs the owner added to est itself, whether or not the caller applied them
}

func (t *tracker) sync(st *State) {
	if t.est == nil || t.est.c != st.Cluster {
		t.est = NewEstimator(st.Cluster, t.mode)
		t.est.full = t.full
		for _, r := range st.Running {
			_ = t.est.add(r, false) // st.Add validated it
		}
		t.est.refillAll()
		t.st, t.gen, t.pending = st, st.gen, nil
		return
	}
	ids, now, ok := st.changesSince(t.gen)
	if t.st != st || !ok {
		ids = nil // ids may alias st's journal: never append to it
		for id := range t.est.jobs {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, r := range st.Running {
			ids = append(ids, r.Job.ID)
		}
	}
	ids = append(slices.Clone(t.pending), ids...)
	for _, id := range ids {
		t.syncJob(st, id)
	}
	t.st, t.gen, t.pending = st, now, t.pending[:0]
}

// syncJob makes the estimator's view of one job match st.
func (t *tracker) syncJob(st *State, id string) {
	r, running := st.Lookup(id)
	j, known := t.est.jobs[id]
	if known && (!running || r.Job != j.p.Job || r.PS != j.p.PS || r.INA != j.p.INA || !slices.Equal(r.Workers, j.p.Workers)) {
		t.est.Remove(id)
		known = false
	}
	if running && !known {
		_ = t.est.Add(r)
	}
}
