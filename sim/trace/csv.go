package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CSVHeader is the column list of the project's trace format (and of the ITP week trace).
var CSVHeader = []string{"job_id", "submit_time_s", "num_gpus", "duration_s"}

// LoadCSV reads `job_id,submit_time_s,num_gpus,duration_s` rows. A header row naming those
// columns (in any order, extra columns allowed) is optional; without one the order above is assumed.
func LoadCSV(r io.Reader, opt Options) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	col := map[string]int{"job_id": 0, "submit_time_s": 1, "num_gpus": 2, "duration_s": 3}
	t := &Trace{}
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			if opt.SkipBad && pe != nil {
				t.Skipped++
				continue
			}
			return nil, &ParseError{Line: line, Err: err}
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if isHeader(rec) {
				h, err := headerColumns(rec, CSVHeader)
				if err != nil {
					return nil, &ParseError{Line: line, Err: err}
				}
				col = h
				continue
			}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		j, field, err := csvJob(rec, col)
		if err == nil {
			field, err = validate(j)
		}
		if err != nil {
			if opt.SkipBad {
				t.Skipped++
				continue
			}
			return nil, &ParseError{Line: line, Field: field, Err: err}
		}
		t.Jobs = append(t.Jobs, j)
	}
	sortJobs(t.Jobs)
	return t, nil
}

// isHeader says whether the first record names columns rather than holding data.
func isHeader(rec []string) bool {
	for _, f := range rec {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			return false
		}
	}
	return true
}

// headerColumns maps each wanted column name to its index in the header.
func headerColumns(rec, want []string) (map[string]int, error) {
	col := map[string]int{}
	for i, f := range rec {
		col[strings.ToLower(strings.TrimSpace(f))] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, fmt.Errorf("header lacks column %q", w)
		}
	}
	return col, nil
}

func csvJob(rec []string, col map[string]int) (Job, string, error) {
	get := func(name string) (string, error) {
		i := col[name]
		if i >= len(rec) {
			return "", errNotFound
		}
		return strings.TrimSpace(rec[i]), nil
	}
	var j Job
	var err error
	if j.ID, err = get("job_id"); err != nil {
		return j, "job_id", err
	}
	s, err := get("submit_time_s")
	if err != nil {
		return j, "submit_time_s", err
	}
	if j.Submit, err = strconv.ParseFloat(s, 64); err != nil {
		return j, "submit_time_s", err
	}
	s, err = get("num_gpus")
	if err != nil {
		return j, "num_gpus", err
	}
	if j.GPUs, err = strconv.Atoi(s); err != nil {
		return j, "num_gpus", err
	}
	s, err = get("duration_s")
	if err != nil {
		return j, "duration_s", err
	}
	if j.Duration, err = strconv.ParseFloat(s, 64); err != nil {
		return j, "duration_s", err
	}
	return j, "", nil
}

// WriteCSV writes jobs in the project's trace format, with a header.
func WriteCSV(w io.Writer, jobs []Job) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, j := range jobs {
		rec := []string{j.ID, strconv.FormatFloat(j.Submit, 'f', -1, 64), strconv.Itoa(j.GPUs),
			strconv.FormatFloat(j.Duration, 'f', -1, 64)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
