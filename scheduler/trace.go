package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// TraceJob is a submission with its submit time, for replaying a trace through the service.
type TraceJob struct {
	Submission
	SubmitSec float64 `json:"submit_s"`
}

// LoadTrace reads a JSON list of trace jobs, sorted by submit time on return.
func LoadTrace(path string) ([]TraceJob, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tr []TraceJob
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	for i, j := range tr {
		if j.SubmitSec < 0 || j.SubmitSec != j.SubmitSec {
			return nil, fmt.Errorf("trace %s: job %d (%s): submit_s must be >= 0", path, i, j.Name)
		}
		if _, err := j.Profile(); err != nil {
			return nil, fmt.Errorf("trace %s: job %d (%s): %w", path, i, j.Name, err)
		}
	}
	slices.SortStableFunc(tr, func(a, b TraceJob) int {
		switch {
		case a.SubmitSec < b.SubmitSec:
			return -1
		case a.SubmitSec > b.SubmitSec:
			return 1
		}
		return 0
	})
	return tr, nil
}
