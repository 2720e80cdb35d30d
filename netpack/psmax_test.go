package netpack

import (
	"fmt"
	"reflect"
	"testing"
)

// psMaxCase places each of a range of jobs alone on a cluster already running a synthetic
// background, with NetPack's placer and the given cap, and returns the placements (nil where the
// job does not fit).
func psMaxCase(t *testing.T, c *Cluster, bg []Placement, cap int, jobs []*Job) []*Placement {
	t.Helper()
	out := make([]*Placement, len(jobs))
	for i, j := range jobs {
		st := NewState(c)
		for _, p := range bg {
			if err := st.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		pl, err := NewPlacer("netpack", Options{})
		if err != nil {
			t.Fatal(err)
		}
		jc := *j
		jc.PSMaxGPUs = cap
		p, ok := PlaceOne(pl, st, &jc)
		if !ok {
			continue
		}
		if err := st.Add(p); err != nil {
			t.Fatalf("cap %d: job %s: NetPack's placement is invalid: %v", cap, j.ID, err)
		}
		p.Job = j
		out[i] = &p
	}
	return out
}

func psMaxSetup(t *testing.T) (*Cluster, []Placement, []*Job) {
	c := mustUniform(t, 2, 4, 8)
	st := NewState(c)
	pl, err := NewPlacer("netpack", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var bg []Placement
	for _, j := range SyntheticJobs(7, 12) {
		if p, ok := PlaceOne(pl, st, j); ok && st.Add(p) == nil {
			bg = append(bg, p)
		}
	}
	var jobs []*Job
	models := ProfileNames()
	for g := 1; g <= 40; g++ {
		m, _ := Profile(models[g%len(models)])
		jobs = append(jobs, &Job{ID: fmt.Sprintf("j%d", g), GPUs: g, Model: m, Iterations: 100})
	}
	return c, bg, jobs
}

// TestPSMaxGPUs: with a cap, NetPack never puts a job's PS on a machine holding more of its
// GPUs than the cap (several worker processes there, only one of which could reach the PS), and
// still places every job it places without one.
func TestPSMaxGPUs(t *testing.T) {
	c, bg, jobs := psMaxSetup(t)
	free := psMaxCase(t, c, bg, 0, jobs)
	moved := 0
	for _, cap := range []int{1, 2, 4} {
		got := psMaxCase(t, c, bg, cap, jobs)
		for i, p := range got {
			if free[i] != nil && p == nil {
				t.Errorf("cap %d: job %s placed without the cap, not with it", cap, jobs[i].ID)
			}
			if p == nil {
				continue
			}
			for _, w := range p.Workers {
				if w.Machine == p.PS && w.GPUs > cap {
					t.Errorf("cap %d: job %s's PS on machine %d with %d of its GPUs: %+v", cap, jobs[i].ID, p.PS, w.GPUs, p.Workers)
				}
			}
			if free[i] != nil && p.PS != free[i].PS {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Error("no cap moved any PS: the case does not exercise the cap")
	}
	t.Logf("%d of %d capped placements have another PS than uncapped", moved, 3*len(jobs))
}

// TestPSMaxGPUsNotBindingChangesNothing: a cap no machine can exceed (its GPUs: one worker per
// machine) gives exactly the placements of no cap.
func TestPSMaxGPUsNotBindingChangesNothing(t *testing.T) {
	c, bg, jobs := psMaxSetup(t)
	free := psMaxCase(t, c, bg, 0, jobs)
	capped := psMaxCase(t, c, bg, 8, jobs)
	for i := range jobs {
		if !reflect.DeepEqual(free[i], capped[i]) {
			t.Errorf("job %s: %+v without a cap, %+v with cap 8", jobs[i].ID, free[i], capped[i])
		}
	}
}
