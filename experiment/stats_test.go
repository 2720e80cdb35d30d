package experiment

import (
	"math"
	"slices"
	"testing"
)

func TestPearsonAndMAPE(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	if r := pearson(x, []float64{2, 4, 6, 8}); math.Abs(r-1) > 1e-12 {
		t.Errorf("perfect line: r = %v", r)
	}
	if r := pearson(x, []float64{8, 6, 4, 2}); math.Abs(r+1) > 1e-12 {
		t.Errorf("falling line: r = %v", r)
	}
	// Hand-computed: x = 1,2,3, y = 1,3,2: sxy = 1, sxx = 2, syy = 2, r = 0.5.
	if r := pearson([]float64{1, 2, 3}, []float64{1, 3, 2}); math.Abs(r-0.5) > 1e-12 {
		t.Errorf("r = %v, want 0.5", r)
	}
	if !math.IsNaN(pearson([]float64{1, 1}, []float64{1, 2})) {
		t.Error("no spread: want NaN")
	}
	if m := mape([]float64{10, 20}, []float64{11, 15}); math.Abs(m-17.5) > 1e-12 {
		t.Errorf("mape = %v, want (10%% + 25%%)/2", m)
	}
}

func TestGenMixes(t *testing.T) {
	racks := [][]string{{"h1", "h2", "h3", "h4", "h5"}, {"h6", "h7", "h8", "h9", "h10"}}
	groups := []group{{Name: "esa-16", Release: "esa", Preempt: true, Slots: 16}, {Name: "atp-16", Release: "atp", Slots: 16}}
	ms := genMixes(1, groups, 12, racks, 4)
	if len(ms) != 24 {
		t.Fatalf("%d mixes, want 24", len(ms))
	}
	var cross, single, off int
	sizes := map[int]bool{}
	for _, m := range ms {
		if len(m.Jobs) < 2 || len(m.Jobs) > 6 {
			t.Errorf("mix %d: %d jobs", m.ID, len(m.Jobs))
		}
		sizes[len(m.Jobs)] = true
		use := map[string]int{}
		for _, j := range m.Jobs {
			if len(j.Workers) < 2 || len(j.Workers) > 8 || slices.Contains(j.Workers, j.PS) {
				t.Errorf("%s: workers %v, ps %s", j.Name, j.Workers, j.PS)
			}
			inRack := func(r []string) bool {
				for _, w := range j.Workers {
					if !slices.Contains(r, w) {
						return false
					}
				}
				return true
			}
			if inRack(racks[0]) || inRack(racks[1]) {
				single++
			} else {
				cross++
			}
			if !j.INA {
				off++
			}
			if m.Group == "atp-16" && j.Priority != 0 {
				t.Errorf("%s: priority %d without preemption", j.Name, j.Priority)
			}
			for _, w := range j.Workers {
				use[w]++
			}
		}
		for h, n := range use {
			if n > 4 {
				t.Errorf("mix %d: %d workers on %s, which has 4 GPUs", m.ID, n, h)
			}
		}
	}
	if cross == 0 || single == 0 || off == 0 || len(sizes) < 4 {
		t.Errorf("cross %d, single %d, INA off %d, mix sizes %v: want every kind", cross, single, off, sizes)
	}
	if !slices.EqualFunc(ms, genMixes(1, groups, 12, racks, 4), func(a, b mix) bool { return len(a.Jobs) == len(b.Jobs) && a.Jobs[0].PS == b.Jobs[0].PS }) {
		t.Error("not deterministic")
	}
}
