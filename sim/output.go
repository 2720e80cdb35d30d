package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// JobsCSVHeader is the column list of WriteJobsCSV.
var JobsCSVHeader = []string{"policy", "job_id", "gpus", "model", "iterations", "submit_s", "start_s", "end_s",
	"jct_s", "queue_s", "machines", "racks", "ina", "counted"}

// WriteJobsCSV writes one row per job; counted is false for jobs inside the warm-up.
func WriteJobsCSV(w io.Writer, results ...*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(JobsCSVHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	for _, res := range results {
		for i := range res.Jobs {
			j := &res.Jobs[i]
			rec := []string{res.Policy, j.ID, strconv.Itoa(j.GPUs), j.Model, strconv.Itoa(j.Iterations),
				f(j.Submit), f(j.Start), f(j.End), f(j.JCT()), f(j.Queue()), strconv.Itoa(j.Machines),
				strconv.Itoa(j.Racks), strconv.FormatBool(j.INA), strconv.FormatBool(j.Submit >= res.Warmup)}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSummary prints one aligned row per result; with a reference policy among them, a column
// gives each policy's mean JCT relative to it.
func WriteSummary(w io.Writer, ref string, results ...*Result) error {
	var refMean float64
	for _, r := range results {
		if r.Policy == ref {
			refMean = r.Summary.MeanJCT
		}
	}
	est := false
	for _, r := range results {
		est = est || r.Summary.EstMAPE > 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\tjobs\tmean JCT h\tmedian h\tp95 h\tqueue h\tmakespan h\tGPU util\tuplink util\tcore util\tINA share\tvs " + ref + "\t"
	if est {
		head += "estimator MAPE\tbias\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range results {
		s := r.Summary
		ratio := "-"
		if refMean > 0 {
			ratio = fmt.Sprintf("%.2fx", s.MeanJCT/refMean)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%s\t", r.Policy, s.Jobs,
			s.MeanJCT/3600, s.MedianJCT/3600, s.P95JCT/3600, s.MeanQueue/3600, s.Makespan/3600,
			100*s.GPUUtil, 100*s.UplinkUtil, 100*s.CoreUtil, 100*s.INAFraction, ratio)
		if est {
			fmt.Fprintf(tw, "%.1f%%\t%+.1f%%\t", 100*s.EstMAPE, 100*s.EstBias)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
