package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const summaryJSON = `{"page": "validation.md", "plots": ["img/validation-throughput.png", "img/validation-jct.png"],
 "switch": "ref", "mixes": 24, "jobs": 93, "cpu_busy": 0.91, "load1": 1.5,
 "fits": [{"name": "simulator throughput", "r": 0.81, "mape_pct": 31.5, "n": 93},
          {"name": "simulator JCT", "r": 0.96, "mape_pct": 21.25, "n": 93}]}`

func TestLoadValidation(t *testing.T) {
	dir := t.TempDir()
	if v, err := LoadValidation(filepath.Join(dir, "absent.json")); v != nil || err != nil {
		t.Errorf("missing file: %v, %v; want nothing", v, err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(summaryJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadValidation(good)
	if err != nil || v.Jobs != 93 || v.fit("simulator JCT").R != 0.96 {
		t.Fatalf("good summary: %+v, %v", v, err)
	}
	for i, bad := range []string{`{`, `{"page": "v.md", "jobs": 0, "fits": [{"name": "x", "r": 0.5, "mape_pct": 1, "n": 1}]}`,
		`{"page": "v.md", "jobs": 3, "fits": [{"name": "x", "r": 1.5, "mape_pct": 1, "n": 3}]}`} {
		f := filepath.Join(dir, fmt.Sprintf("bad%d.json", i))
		if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadValidation(f); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// The section shows every fit, links the page and the plots through the summary's directory, and
// the papers table quotes the reference switch's simulator figures.
func TestValidationSection(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "s.json")
	if err := os.WriteFile(f, []byte(summaryJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadValidation(f)
	if err != nil {
		t.Fatal(err)
	}
	v.Link = "../docs"
	rep := &Report{Cfg: Config{Validations: []*Validation{v}}}
	var b strings.Builder
	rep.validationSection(func(format string, a ...any) { fmt.Fprintf(&b, format, a...) })
	md := b.String()
	for _, want := range []string{"## 11.", "| ref | 24 | 93 | simulator JCT | 0.960 | 21.2% | [validation.md](../docs/validation.md) |",
		"![validation-throughput](../docs/img/validation-throughput.png)", "CPUs 91% busy"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if got := rep.validationClaim(); !strings.Contains(got, "r = 0.96 for JCT and 0.81 for throughput over 93 jobs") {
		t.Errorf("claim %q", got)
	}
	var none strings.Builder
	(&Report{}).validationSection(func(format string, a ...any) { fmt.Fprintf(&none, format, a...) })
	if !strings.Contains(none.String(), "No validation summary") {
		t.Errorf("without summaries: %q", none.String())
	}
}
