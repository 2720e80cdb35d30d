package sim

import (
	"math"
	"testing"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim/trace"
)

func TestModelBuckets(t *testing.T) {
	for _, c := range []struct {
		gpus int
		dur  float64
		want string
	}{{1, 3599, "resnet50"}, {1, 3600, "bert-base"}, {8, 4 * 3600, "resnet152"}, {32, 4 * 3600, "vgg16"}} {
		m, err := ModelFor(DefaultBuckets, trace.Job{GPUs: c.gpus, Duration: c.dur})
		if err != nil || m.Name != c.want {
			t.Errorf("%d GPUs x %v s: %s %v, want %s", c.gpus, c.dur, m.Name, err, c.want)
		}
	}
	if _, err := ModelFor([]Bucket{{math.Inf(1), "no-such-model"}}, trace.Job{GPUs: 1, Duration: 1}); err == nil {
		t.Error("unknown profile accepted")
	}
}

// A job alone in the cluster runs for its trace duration (up to rounding to whole iterations),
// whatever its size: that is what the iteration conversion promises.
func TestIsolatedJobKeepsTraceDuration(t *testing.T) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 2, MachinesPerRack: 4, GPUsPerMachine: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tj := range []trace.Job{{ID: "s", GPUs: 1, Duration: 1800}, {ID: "m", GPUs: 8, Duration: 7200},
		{ID: "l", GPUs: 32, Duration: 36000}, {ID: "xl", GPUs: 64, Duration: 3600}} {
		w, err := Prepare(Setup{Cluster: c, Network: DefaultNetwork(), INA: true, Interval: 1},
			&trace.Trace{Jobs: []trace.Job{tj, {ID: "huge", GPUs: 65, Duration: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Jobs) != 1 || len(w.TooBig) != 1 {
			t.Fatalf("jobs %d, too big %d", len(w.Jobs), len(w.TooBig))
		}
		res, err := Run(Config{Cluster: w.Cluster, Policy: firstFit{psAt: -1, ina: true}, Interval: 1}, w.Jobs)
		if err != nil {
			t.Fatal(err)
		}
		r := res.Jobs[0]
		perIter := tj.Duration / float64(r.Iterations)
		if math.Abs(r.End-r.Start-tj.Duration) > perIter {
			t.Errorf("%s (%s, %d GPUs): ran %.1f s, trace says %.1f s", tj.ID, r.Model, tj.GPUs, r.End-r.Start, tj.Duration)
		}
	}
}

func TestDuplicateJobIDs(t *testing.T) {
	c, _ := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 1, GPUsPerMachine: 1})
	_, err := Prepare(Setup{Cluster: c, Network: DefaultNetwork(), Interval: 1},
		&trace.Trace{Jobs: []trace.Job{{ID: "a", GPUs: 1, Duration: 1}, {ID: "a", GPUs: 1, Duration: 2}}})
	if err == nil {
		t.Fatal("duplicate ids accepted")
	}
}

// ESA, ATP and INA-off runs of one trace simulate the same work (iterations); without INA the
// job's three streams meet at its PS's NIC and it runs slower than its trace duration.
func TestSameWorkWhateverTheSlots(t *testing.T) {
	c, err := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 4, GPUsPerMachine: 2, NICGbps: 10, INAMemoryBytes: 65536})
	if err != nil {
		t.Fatal(err)
	}
	tr := &trace.Trace{Jobs: []trace.Job{{ID: "w", GPUs: 8, Duration: 72000}}}
	var iters []int
	var ran []float64
	for _, s := range []Setup{
		{Cluster: c, Network: DefaultNetwork(), INA: true, Interval: 1},
		{Cluster: c, Network: Network{Slots: SlotModel{Policy: ATP, SkewFrac: 0.5, PSSec: 5e-6}}, INA: true, Interval: 1},
		{Cluster: c, Network: DefaultNetwork(), INA: false, Interval: 1},
	} {
		w, err := Prepare(s, tr)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(Config{Cluster: w.Cluster, Network: s.Network, NoINA: !s.INA, Policy: firstFit{psAt: -1, ina: s.INA}, Interval: 1}, w.Jobs)
		if err != nil {
			t.Fatal(err)
		}
		iters = append(iters, w.Jobs[0].Iterations)
		ran = append(ran, res.Jobs[0].End-res.Jobs[0].Start)
	}
	if iters[0] != iters[1] || iters[0] != iters[2] {
		t.Fatalf("iterations ESA %d, ATP %d, INA off %d: want the same work", iters[0], iters[1], iters[2])
	}
	if math.Abs(ran[0]-72000) > 72000/float64(iters[0]) || ran[2] <= ran[0]*1.1 {
		t.Fatalf("ran ESA %.0f s, ATP %.0f s, INA off %.0f s; want ESA = 72000 and INA off slower", ran[0], ran[1], ran[2])
	}
}

// A seed redraws the model mix: the same seed gives the same models, another seed other ones,
// seed 0 the id's own hash; and GradScale scales every gradient, keeping trace durations.
func TestMixSeedAndGradScale(t *testing.T) {
	mix := []string{"resnet50", "vgg16", "alexnet"}
	var jobs []trace.Job
	for i := range 60 {
		jobs = append(jobs, trace.Job{ID: string(rune('a'+i%26)) + string(rune('a'+i/26)), GPUs: 1, Duration: 600})
	}
	names := func(seed uint64) []string {
		var out []string
		for _, j := range jobs {
			m, err := MixModel(mix, j, seed)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m.Name)
		}
		return out
	}
	a, b, c := names(1), names(1), names(2)
	same := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("seed 1 drew different models for the same job")
		}
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Error("seeds 1 and 2 drew the same model for every job")
	}
	c2, err := netpack.Uniform(netpack.UniformSpec{Racks: 1, MachinesPerRack: 2, GPUsPerMachine: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr := &trace.Trace{Jobs: []trace.Job{{ID: "x", GPUs: 4, Duration: 3600}}}
	w1, err1 := Prepare(Setup{Cluster: c2, Network: DefaultNetwork(), INA: true, Interval: 1, Mix: mix}, tr)
	w2, err2 := Prepare(Setup{Cluster: c2, Network: DefaultNetwork(), INA: true, Interval: 1, Mix: mix, GradScale: 2}, tr)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if g1, g2 := w1.Jobs[0].Model.GradientBytes, w2.Jobs[0].Model.GradientBytes; g2 != 2*g1 {
		t.Errorf("gradient scale 2: %v bytes, want 2 x %v", g2, g1)
	}
	if _, err := Prepare(Setup{Cluster: c2, Network: DefaultNetwork(), INA: true, Interval: 1, Mix: mix, GradScale: -1}, tr); err == nil {
		t.Error("negative gradient scale accepted")
	}
}
