package experiment

import (
	"encoding/json"
	"os"
)

// summary is the headline of a validation report, written beside it (<report>-summary.json) for
// the evaluation report (sim/eval), which shows it without re-reading the measurements.
type summary struct {
	Page    string       `json:"page"`               // the report's file name, e.g. validation.md
	Plots   []string     `json:"plots"`              // its scatter plots, relative to the page's directory
	Switch  string       `json:"switch"`             // ref or bmv2
	Mixes   int          `json:"mixes"`              // job mixes run
	Jobs    int          `json:"jobs"`               // jobs compared
	CPUBusy float64      `json:"cpu_busy,omitempty"` // median fraction of the CPUs busy during a mix
	Load1   float64      `json:"load1,omitempty"`    // median 1-minute load at the mixes' starts
	Fits    []summaryFit `json:"fits"`
}

type summaryFit struct {
	Name string  `json:"name"` // e.g. "simulator throughput"
	R    float64 `json:"r"`
	MAPE float64 `json:"mape_pct"`
	N    int     `json:"n"`
}

func (v validation) writeSummary(path, page, base string, res *results) error {
	s := summary{Page: page, Switch: res.Switch, Mixes: len(res.Mixes),
		Plots: []string{"img/" + base + "-throughput.png", "img/" + base + "-jct.png"}}
	var busy, load []float64
	for _, m := range res.Mixes {
		if m.Machine != nil {
			busy, load = append(busy, m.Machine.Busy), append(load, m.Machine.Load1)
		}
	}
	s.CPUBusy, s.Load1 = median(busy), median(load)
	for _, f := range v.fits {
		s.Fits = append(s.Fits, summaryFit{Name: f.name, R: round3(f.r), MAPE: round3(f.mape), N: len(f.measured)})
		s.Jobs = max(s.Jobs, len(f.measured))
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
