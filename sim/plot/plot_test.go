package plot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSaveAll(t *testing.T) {
	dir := t.TempDir()
	cdf, err := CDF("JCT", "hours", []Series{{"a", []float64{1, 2, 3, 10}}, {"b", []float64{0.5, 4}}, {"empty", nil}})
	if err != nil {
		t.Fatal(err)
	}
	bars, err := Bars("mean", "hours", []string{"a", "b"}, []float64{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := Lines("scale", "machines", "gain", []float64{100, 1000}, []Series{{"x", []float64{1, 2}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lines("bad", "", "", []float64{1}, []Series{{"x", []float64{1, 2}}}, false); err == nil {
		t.Error("length mismatch accepted")
	}
	for _, c := range []struct {
		name string
		save func(string) error
	}{{"cdf", func(b string) error { return Save(cdf, b) }}, {"bars", func(b string) error { return Save(bars, b) }},
		{"lines", func(b string) error { return Save(lines, b) }}} {
		base := filepath.Join(dir, "img", c.name)
		if err := c.save(base); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".png", ".svg"} {
			st, err := os.Stat(base + ext)
			if err != nil || st.Size() < 100 {
				t.Errorf("%s%s: %v", base, ext, err)
			}
		}
	}
}
