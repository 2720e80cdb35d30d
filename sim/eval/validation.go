package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"strings"
)

// Validation is the headline of a validation of the simulator and the estimator against packets
// (`make validate` writes it beside its report, e.g. docs/validation-summary.json). The report
// shows it in its own section and beside the paper's testbed correlation.
type Validation struct {
	Page    string          `json:"page"`  // the validation report, relative to the summary's directory
	Plots   []string        `json:"plots"` // its scatter plots, likewise
	Switch  string          `json:"switch"`
	Mixes   int             `json:"mixes"`
	Jobs    int             `json:"jobs"`
	CPUBusy float64         `json:"cpu_busy"`
	Load1   float64         `json:"load1"`
	Fits    []ValidationFit `json:"fits"`
	// Link is how the evaluation report reaches the summary's directory (set by the loader's caller;
	// "" when both are in one directory).
	Link string `json:"-"`
}

// ValidationFit is one prediction's agreement with the measurements.
type ValidationFit struct {
	Name string  `json:"name"` // "<estimator|simulator> <throughput|JCT>"
	R    float64 `json:"r"`
	MAPE float64 `json:"mape_pct"`
	N    int     `json:"n"`
}

// LoadValidation reads a validation summary; a file that does not exist is (nil, nil): the
// validation has not been run where the report is generated.
func LoadValidation(file string) (*Validation, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v Validation
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if v.Page == "" || v.Jobs <= 0 || len(v.Fits) == 0 {
		return nil, fmt.Errorf("%s: not a validation summary (page %q, %d jobs, %d fits)", file, v.Page, v.Jobs, len(v.Fits))
	}
	for _, f := range v.Fits {
		if math.IsNaN(f.R) || f.R < -1 || f.R > 1 || !(f.MAPE >= 0) || f.N <= 0 {
			return nil, fmt.Errorf("%s: fit %q: r %v, MAPE %v, %d jobs", file, f.Name, f.R, f.MAPE, f.N)
		}
	}
	return &v, nil
}

// fit returns the named fit (nil if absent).
func (v *Validation) fit(name string) *ValidationFit {
	for i := range v.Fits {
		if v.Fits[i].Name == name {
			return &v.Fits[i]
		}
	}
	return nil
}

func (v *Validation) link(p string) string { return path.Join(v.Link, p) }

func (v *Validation) switchName() string {
	if v.Switch == "bmv2" {
		return "BMv2"
	}
	return "the reference switch"
}

// validationSection shows the validations against packets: what was compared, the headline r and
// error, and the scatter plots, linking to the full reports.
func (rep *Report) validationSection(p func(string, ...any)) {
	p("## 11. The simulator and the estimator against packets\n\n")
	defer rep.packetsSection(p)
	if len(rep.Cfg.Validations) == 0 {
		p("No validation summary was found when this report was generated (`make validate` writes `docs/validation-summary.json`).\n\n")
		return
	}
	p("`make validate` runs job mixes on fixed placements through the scheduler service on an emulated two-rack cluster ")
	p("(switches and agents as processes in network namespaces, rate-limited links) and compares each job's measured ")
	p("all-reduce goodput and run time with what the simulator (`sim.Predict`) and NetPack's estimator predict for the same ")
	p("mix; it calibrates only the simulator's stated inputs (the round trip and the per-packet switch cost, once per switch ")
	p("setting, never per mix). The figures below are read from the summaries it writes beside its reports, which give ")
	p("every job, the causes of the disagreements and how the machine's load bears on them.\n\n")
	p("| switch | mixes | jobs | prediction | Pearson r | mean abs. %% error | report |\n|---|---:|---:|---|---:|---:|---|\n")
	for _, v := range rep.Cfg.Validations {
		for _, f := range v.Fits {
			p("| %s | %d | %d | %s | %.3f | %.1f%% | [%s](%s) |\n", v.Switch, v.Mixes, f.N, f.Name, f.R, f.MAPE, v.Page, v.link(v.Page))
		}
	}
	p("\n")
	for _, v := range rep.Cfg.Validations {
		var load string
		if v.CPUBusy > 0 {
			load = fmt.Sprintf(" (the machine's CPUs %.0f%% busy during a mix, median; load %.1f at the mixes' starts)", 100*v.CPUBusy, v.Load1)
		}
		p("On %s%s:\n\n", v.switchName(), load)
		for _, pl := range v.Plots {
			what := strings.TrimSuffix(path.Base(pl), path.Ext(pl))
			p("![%s](%s)\n\n", what, v.link(pl))
		}
	}
}

// validationClaim is the papers table's "here" for the testbed correlation, when measured.
func (rep *Report) validationClaim() string {
	for _, v := range rep.Cfg.Validations {
		if v.Switch != "ref" {
			continue
		}
		t, j := v.fit("simulator throughput"), v.fit("simulator JCT")
		if t == nil || j == nil {
			continue
		}
		return fmt.Sprintf("; the simulator against packets on an emulated cluster: r = %.2f for JCT and %.2f for throughput over %d jobs (section 11)", j.R, t.R, j.N)
	}
	return ""
}
