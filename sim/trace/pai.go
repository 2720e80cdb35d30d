package trace

import (
	"encoding/csv"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
)

// PAIJobColumns and PAITaskColumns are the column orders of Alibaba's cluster-trace-gpu-v2020
// pai_job_table.csv and pai_task_table.csv (the release files have no header row; a header
// naming these columns is accepted too).
var (
	PAIJobColumns  = []string{"job_name", "inst_id", "user", "status", "start_time", "end_time"}
	PAITaskColumns = []string{"job_name", "task_name", "inst_num", "status", "start_time", "end_time",
		"plan_cpu", "plan_mem", "plan_gpu", "gpu_type"}
)

// LoadPAI reads an Alibaba PAI job table. Submit time is start_time (the table has no separate
// submission time), duration is end_time - start_time, and only jobs with status Terminated are
// kept (others, and rows without an end time, count as Incomplete). The job table has no GPU
// count: when tasks is non-nil, a job's GPUs are ceil(sum over its tasks of inst_num x plan_gpu /
// 100), and jobs that ask for no GPU count as Incomplete; when tasks is nil every job gets one GPU.
func LoadPAI(jobs, tasks io.Reader, opt Options) (*Trace, error) {
	var gpus map[string]float64
	t := &Trace{}
	if tasks != nil {
		var err error
		if gpus, err = paiTaskGPUs(tasks, opt, t); err != nil {
			return nil, err
		}
	}
	err := readRows(jobs, PAIJobColumns, opt, t, func(get func(string) string) (string, error) {
		if get("status") != "Terminated" || get("end_time") == "" {
			t.Incomplete++
			return "", nil
		}
		j := Job{ID: get("job_name"), GPUs: 1}
		start, err := strconv.ParseFloat(get("start_time"), 64)
		if err != nil {
			return "start_time", err
		}
		end, err := strconv.ParseFloat(get("end_time"), 64)
		if err != nil {
			return "end_time", err
		}
		j.Submit, j.Duration = start, end-start
		if gpus != nil {
			g := gpus[j.ID]
			if !(g > 0) {
				t.Incomplete++
				return "", nil
			}
			if g > MaxGPUs {
				return "plan_gpu", errRange
			}
			j.GPUs = int(math.Ceil(g/100 - 1e-9))
		}
		if f, err := validate(j); err != nil {
			return f, err
		}
		t.Jobs = append(t.Jobs, j)
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	sortJobs(t.Jobs)
	t.Rebase()
	return t, nil
}

// paiTaskGPUs sums GPU percentages per job from a task table.
func paiTaskGPUs(r io.Reader, opt Options, t *Trace) (map[string]float64, error) {
	gpus := map[string]float64{}
	err := readRows(r, PAITaskColumns, opt, t, func(get func(string) string) (string, error) {
		if get("plan_gpu") == "" {
			return "", nil
		}
		n, err := strconv.ParseFloat(get("inst_num"), 64)
		if err != nil || n < 0 || n > MaxGPUs {
			return "inst_num", errors.Join(errRange, err)
		}
		g, err := strconv.ParseFloat(get("plan_gpu"), 64)
		if err != nil || g < 0 || g > 100*MaxGPUs {
			return "plan_gpu", errors.Join(errRange, err)
		}
		gpus[get("job_name")] += n * g
		return "", nil
	})
	return gpus, err
}

// readRows feeds each data row of a CSV with the given default column order to fn, which returns
// the bad field and error for a malformed row. Rows are skipped and counted under SkipBad.
func readRows(r io.Reader, cols []string, opt Options, t *Trace, fn func(get func(string) string) (string, error)) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	col := map[string]int{}
	for i, c := range cols {
		col[c] = i
	}
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return err
			}
			if opt.SkipBad {
				t.Skipped++
				continue
			}
			return &ParseError{Line: pe.StartLine, Err: err}
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if len(rec) > 0 && strings.TrimSpace(rec[0]) == cols[0] {
				h, err := headerColumns(rec, cols[:1])
				if err != nil {
					return &ParseError{Line: line, Err: err}
				}
				col = h
				continue
			}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		get := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return ""
			}
			return strings.TrimSpace(rec[i])
		}
		if field, err := fn(get); err != nil {
			if opt.SkipBad {
				t.Skipped++
				continue
			}
			return &ParseError{Line: line, Field: field, Err: err}
		}
	}
}
