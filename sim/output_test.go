package sim

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/inapack/inapack/netpack"
)

func TestWriteJobsCSVAndSummary(t *testing.T) {
	c := testCluster(t, 1, 1, 1, 0)
	res, err := Run(Config{Cluster: c, Policy: firstFit{psAt: -1}, Interval: 10, Warmup: 1},
		[]*netpack.Job{job("a", 0, 1, 100_000), job("b", 5, 1, 50_000)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteJobsCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{JobsCSVHeader,
		{"first-fit", "a", "1", "test", "100000", "0.000", "0.000", "100.000", "100.000", "0.000", "1", "1", "false", "false"},
		{"first-fit", "b", "1", "test", "50000", "5.000", "100.000", "150.000", "145.000", "95.000", "1", "1", "false", "true"}}
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	b.Reset()
	if err := WriteSummary(&b, "first-fit", res); err != nil {
		t.Fatal(err)
	}
	// one counted job (b): JCT 145 s = 0.04 h, ratio 1.00x to itself
	if s := b.String(); !strings.Contains(s, "0.04") || !strings.Contains(s, "1.00x") {
		t.Errorf("summary:\n%s", s)
	}
}
