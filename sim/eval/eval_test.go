package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/sim/trace"
)

// A miniature evaluation: every section is produced, every linked plot exists, and the report
// quotes the measured numbers (no NaN).
func TestEvaluateSmall(t *testing.T) {
	tr, err := trace.Synthetic(trace.SynthConfig{Jobs: 40, TotalGPUs: 64, Load: 0.9, MaxGPUs: 32, DurationScale: 0.05}, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := Evaluate(Config{Trace: tr, TraceName: "synthetic", Racks: 2, Machines: 4, GPUs: 8, Interval: 60,
		Sizes: []int{40}, JobsPerM: 1, MaxJobs: 40, Seed: 1,
		Memory: MemoryBound{Racks: 2, Machines: 4, GPUs: 2, Jobs: 30, GPUScale: 2, Load: 0.9, Memories: []float64{4096}, Seeds: 2},
		ImgDir: filepath.Join(dir, "img"), ImgLink: "img"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"## 1.", "## 2. INA disabled", "## 3. Joint", "## 4. Cluster size", "## 5. ESA", "## 6. Switch memory", "## 7. Side by side", "ESA's priority order alone",
		"| netpack |", "up to 63%", "1.35x"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "NaN") {
		t.Error("report contains NaN")
	}
	for _, img := range rep.Images {
		for _, ext := range []string{".png", ".svg"} {
			if _, err := os.Stat(filepath.Join(dir, "img", img+ext)); err != nil {
				t.Error(err)
			}
		}
	}
}
