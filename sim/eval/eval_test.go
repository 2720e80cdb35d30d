package eval

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inapack/inapack/sim/trace"
)

// small is a miniature of the evaluation: every experiment, on a few machines and jobs.
func small(t *testing.T, dir string, workers int) (*Report, string) {
	t.Helper()
	tr, err := trace.Synthetic(trace.SynthConfig{Jobs: 60, TotalGPUs: 16, Load: 0.6, MaxGPUs: 8, DurationScale: 0.05}, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(tr, "synthetic.csv")
	cfg.Paper.Racks, cfg.Paper.Machines = 2, 4 // 16 GPUs
	cfg.Legacy.Racks, cfg.Legacy.Machines = 1, 2
	cfg.Loads = []float64{0.5, 0.9}
	cfg.Memories = []float64{16 << 10, 64 << 10}
	cfg.GPUs = []int{2, 4}
	cfg.Oversubs = []float64{1, 4}
	cfg.Sizes, cfg.SizeRack, cfg.SizeJobs, cfg.SynthJobs = []int{8, 16}, 4, 30, 40
	cfg.ImgDir, cfg.ImgLink, cfg.Workers = filepath.Join(dir, "img"), "img", workers
	cfg.Seeds, cfg.VerdictSeeds = []uint64{1, 2}, 12
	cfg.Grid.Base.Racks, cfg.Grid.Base.Machines, cfg.Grid.Jobs = 2, 4, 30
	return evaluate(t, cfg)
}

// evaluate runs the evaluation and renders its report.
func evaluate(t *testing.T, cfg Config) (*Report, string) {
	t.Helper()
	rep, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	return rep, b.String()
}

// Every section is produced, every linked plot exists, and the report quotes measured numbers.
func TestEvaluateSmall(t *testing.T) {
	dir := t.TempDir()
	rep, md := small(t, dir, 0)
	for _, want := range []string{"## Summary", "## 1. Setup", "## 2. Placement under equal admission", "## 3. Admission",
		"## 4. Synthetic", "## 5. The earlier setting", "## 6. NetPack's estimator", "### 7.1 Offered load", "### 7.5 Cluster size",
		"### 8.1 INA off", "### 8.2 Joint", "### 8.3 ESA", "## 9. Every comparison point", "## 10. Side by side", "| netpack |",
		"| netpack-v1 |", "## 12. Where the network decides", " ± ",
		"up to 63%", "1.35x", "98% correlation", "tf_cnn_benchmarks"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Error("report contains NaN")
	}
	for _, img := range rep.Images {
		if !strings.Contains(md, "img/"+img+".svg") && img != "jct-mean" && img != "jct-cdf" {
			t.Errorf("plot %s is not linked", img)
		}
		for _, ext := range []string{".png", ".svg"} {
			if _, err := os.Stat(filepath.Join(dir, "img", img+ext)); err != nil {
				t.Error(err)
			}
		}
	}
}

// Each open verdict gets more seeds until it closes or has VerdictSeeds: the rerun extends the
// experiment's own seeds and the verdict is taken over all of them.
func TestRefine(t *testing.T) {
	rep, md := small(t, t.TempDir(), 0)
	refined := 0
	for _, pt := range rep.points() {
		r, g := pt.run, pt.gain
		if open(g, rep.Cfg.VerdictHalfWidth) && g.n < rep.Cfg.VerdictSeeds {
			t.Errorf("%s: verdict %s over %d seeds left open", r.Label, pctCI(g), g.n)
		}
		if g.n > rep.Cfg.VerdictSeeds || !onSchedule(g.n, len(rep.Cfg.Seeds), rep.Cfg.VerdictSeeds) {
			t.Errorf("%s: %d seeds", r.Label, g.n)
		}
		if g.n == len(rep.Cfg.Seeds) {
			continue
		}
		refined++
		for _, p := range []string{"netpack", pt.best} {
			if got, want := r.Verdict[p][:len(rep.Cfg.Seeds)], r.perSeed(p, meanJCT); !slices.Equal(got, want) {
				t.Errorf("%s, %s: the verdict's first seeds %v are not the experiment's %v", r.Label, p, got, want)
			}
		}
		if !strings.Contains(md, fmt.Sprintf("| %s | %d |", pctCI(g), g.n)) {
			t.Errorf("%s: section 9 lacks the verdict over %d seeds", r.Label, g.n)
		}
	}
	if refined == 0 {
		t.Error("no verdict was refined (2 seeds leave every interval wide)")
	}
}

// onSchedule reports whether a verdict over n seeds is one refine can reach from first seeds:
// batch(k) more at a time from k = first, or the cap.
func onSchedule(n, first, cap int) bool {
	for k := first; k <= n; k += batch(k) {
		if k == n {
			return true
		}
	}
	return n == cap
}

// The report and its plots are a function of the trace and the configuration only: two runs
// (with different parallelism, so runs finish in a different order) write the same bytes.
func TestEvaluateDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	_, mdA := small(t, a, 1)
	_, mdB := small(t, b, 3)
	if mdA != mdB {
		t.Fatal("two runs wrote different reports")
	}
	files, err := os.ReadDir(filepath.Join(a, "img"))
	if err != nil || len(files) == 0 {
		t.Fatal("no plots", err)
	}
	for _, f := range files {
		x, err1 := os.ReadFile(filepath.Join(a, "img", f.Name()))
		y, err2 := os.ReadFile(filepath.Join(b, "img", f.Name()))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("plot %s differs between runs (%v %v)", f.Name(), err1, err2)
		}
	}
}

// Any trace in the CSV format must go through: here every job submitted at once (no span, so no
// load to scale to) and one job larger than the cluster.
func TestEvaluateDegenerateTrace(t *testing.T) {
	tr, err := trace.LoadCSV(strings.NewReader("job_id,submit_time_s,num_gpus,duration_s\na,0,1,600\nb,0,8,3600\nc,0,4,7200\nd,0,4096,100\n"), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(tr, "tiny.csv")
	cfg.Paper.Racks, cfg.Paper.Machines = 2, 4
	cfg.Legacy.Racks, cfg.Legacy.Machines = 1, 2
	cfg.Loads, cfg.Memories, cfg.GPUs, cfg.Oversubs = []float64{0.9}, []float64{64 << 10}, []int{2}, []float64{4}
	cfg.Sizes, cfg.SizeRack, cfg.SizeJobs, cfg.SynthJobs = []int{8}, 4, 20, 20
	cfg.Seeds, cfg.Grid = []uint64{1}, Grid{}
	cfg.ImgDir, cfg.ImgLink = filepath.Join(t.TempDir(), "img"), "img"
	if _, md := evaluate(t, cfg); strings.Contains(md, "NaN") || !strings.Contains(md, "1 jobs larger than the cluster are left out") {
		t.Errorf("report on a degenerate trace:\n%s", md)
	}
}
