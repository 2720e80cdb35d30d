package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// phillyJob is one record of Philly's cluster_job_log (msr-fiddle/philly-traces).
type phillyJob struct {
	JobID     string `json:"jobid"`
	Status    string `json:"status"`
	Submitted string `json:"submitted_time"`
	Attempts  []struct {
		Start  string `json:"start_time"`
		End    string `json:"end_time"`
		Detail []struct {
			IP   string   `json:"ip"`
			GPUs []string `json:"gpus"`
		} `json:"detail"`
	} `json:"attempts"`
}

const phillyTime = "2006-01-02 15:04:05"

// LoadPhilly reads Philly's cluster_job_log: a JSON array of jobs, each with a submission time
// and attempts. Duration is the last attempt's end minus the first attempt's start (the time the
// job held GPUs, retries included); GPUs are counted in the last attempt's placement. Jobs with no
// complete attempt are counted in Trace.Incomplete. Submit times are rebased to the first job.
func LoadPhilly(r io.Reader, opt Options) (*Trace, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, &ParseError{Line: 1, Err: fmt.Errorf("not a JSON array: %w", err)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &ParseError{Line: 1, Err: errors.New("not a JSON array")}
	}
	t := &Trace{}
	for n := 1; dec.More(); n++ {
		var pj phillyJob
		if err := dec.Decode(&pj); err != nil {
			var ute *json.UnmarshalTypeError
			if opt.SkipBad && errors.As(err, &ute) {
				t.Skipped++
				continue
			}
			return nil, &ParseError{Line: n, Err: err}
		}
		j, complete, field, err := phillyToJob(pj)
		if err == nil && complete {
			field, err = validate(j)
		}
		if err != nil {
			if opt.SkipBad {
				t.Skipped++
				continue
			}
			return nil, &ParseError{Line: n, Field: field, Err: err}
		}
		if !complete {
			t.Incomplete++
			continue
		}
		t.Jobs = append(t.Jobs, j)
	}
	if _, err := dec.Token(); err != nil {
		return nil, &ParseError{Line: len(t.Jobs) + t.Skipped + t.Incomplete + 1, Err: fmt.Errorf("unterminated array: %w", err)}
	}
	sortJobs(t.Jobs)
	t.Rebase()
	return t, nil
}

// phillyToJob converts one record; complete is false when the job never finished an attempt.
func phillyToJob(pj phillyJob) (Job, bool, string, error) {
	j := Job{ID: pj.JobID}
	sub, err := time.Parse(phillyTime, pj.Submitted)
	if err != nil {
		return j, false, "submitted_time", err
	}
	if len(pj.Attempts) == 0 {
		return j, false, "", nil
	}
	first, last := pj.Attempts[0], pj.Attempts[len(pj.Attempts)-1]
	if first.Start == "" || first.Start == "None" || last.End == "" || last.End == "None" {
		return j, false, "", nil
	}
	start, err := time.Parse(phillyTime, first.Start)
	if err != nil {
		return j, false, "start_time", err
	}
	end, err := time.Parse(phillyTime, last.End)
	if err != nil {
		return j, false, "end_time", err
	}
	for _, d := range last.Detail {
		j.GPUs += len(d.GPUs)
	}
	if j.GPUs == 0 {
		return j, false, "", nil
	}
	// Unix seconds keep submit times comparable across records until Rebase.
	j.Submit = float64(sub.Unix())
	j.Duration = end.Sub(start).Seconds()
	if j.Duration <= 0 {
		return j, false, "", nil
	}
	return j, true, "", nil
}
