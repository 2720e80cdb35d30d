package sim

import (
	"math"
	"slices"
)

// JobResult is one job's outcome. Times are seconds from the trace start.
type JobResult struct {
	ID         string
	GPUs       int
	Model      string
	Iterations int
	Submit     float64
	Start      float64
	End        float64
	Machines   int  // machines its workers span
	Racks      int  // racks its workers span
	INA        bool // the policy enabled INA for it
	// For jobs that use the network: the simulated iteration rate (iterations / run time) and,
	// with Config.Estimate, netpack's estimate of it (time-mean over the run); 0 otherwise.
	SimIterPerSec, EstIterPerSec float64
}

// JCT is submit to completion.
func (j *JobResult) JCT() float64 { return j.End - j.Submit }

// Queue is submit to start.
func (j *JobResult) Queue() float64 { return j.Start - j.Submit }

// Result is a whole run.
type Result struct {
	Policy string
	Jobs   []JobResult // trace order
	// Warmup: jobs submitted before it are in Jobs but not in Summary.
	Warmup  float64
	Summary Summary
}

// Summary is the table row of a run; JCT and queueing figures cover jobs submitted at or after
// the warm-up, utilisation the arrival window (first to last submission).
type Summary struct {
	Jobs          int     `json:"jobs"`       // jobs counted
	MeanJCT       float64 `json:"mean_jct_s"` // seconds
	MedianJCT     float64 `json:"median_jct_s"`
	P95JCT        float64 `json:"p95_jct_s"`
	MeanQueue     float64 `json:"mean_queue_s"`
	Makespan      float64 `json:"makespan_s"`      // first submission to last completion, all jobs
	GPUUtil       float64 `json:"gpu_util"`        // busy GPU-seconds / (GPUs x arrival window)
	UplinkUtil    float64 `json:"uplink_util"`     // time-mean over racks of uplink load / capacity
	CoreUtil      float64 `json:"core_util"`       // time-mean core load / core capacity
	INAFraction   float64 `json:"ina_fraction"`    // share of pushed gradient bytes aggregated in switches (whole run)
	MultiRackJobs int     `json:"multi_rack_jobs"` // counted jobs whose workers span more than one rack
	NetworkJobs   int     `json:"network_jobs"`    // counted jobs whose workers span more than one machine
	// With Config.Estimate: over counted network jobs, the mean absolute and the mean signed
	// relative error of netpack's estimated iteration rate against the simulated one.
	EstMAPE float64 `json:"estimator_mape,omitempty"`
	EstBias float64 `json:"estimator_bias,omitempty"`
}

func (s *state) result() *Result {
	res := &Result{Policy: s.cfg.Policy.Name(), Jobs: s.recs, Warmup: s.cfg.Warmup}
	res.Summary = summarize(s.recs, s.cfg.Warmup)
	first, last := math.Inf(1), math.Inf(-1)
	for i := range s.recs {
		first = min(first, s.recs[i].Submit)
		last = max(last, s.recs[i].End)
	}
	if len(s.recs) > 0 {
		res.Summary.Makespan = last - first
	}
	u := &s.usage
	if u.elapsed > 0 {
		res.Summary.GPUUtil = u.gpuSec / (float64(s.cfg.Cluster.TotalGPUs()) * u.elapsed)
		res.Summary.UplinkUtil = u.upSec / u.elapsed
		res.Summary.CoreUtil = u.coreSec / u.elapsed
	}
	if u.grad > 0 {
		res.Summary.INAFraction = u.inaChunks / u.grad
	}
	return res
}

// summarize computes the JCT statistics of jobs submitted at or after warmup.
func summarize(recs []JobResult, warmup float64) Summary {
	var sum Summary
	var jcts []float64
	var q float64
	for i := range recs {
		r := &recs[i]
		if r.Submit < warmup {
			continue
		}
		jcts = append(jcts, r.JCT())
		q += r.Queue()
		if r.Racks > 1 {
			sum.MultiRackJobs++
		}
		if r.SimIterPerSec > 0 {
			sum.NetworkJobs++
			if r.EstIterPerSec > 0 {
				e := (r.EstIterPerSec - r.SimIterPerSec) / r.SimIterPerSec
				sum.EstMAPE += math.Abs(e)
				sum.EstBias += e
			}
		}
	}
	if sum.NetworkJobs > 0 {
		sum.EstMAPE /= float64(sum.NetworkJobs)
		sum.EstBias /= float64(sum.NetworkJobs)
	}
	sum.Jobs = len(jcts)
	if len(jcts) == 0 {
		return sum
	}
	slices.Sort(jcts)
	var t float64
	for _, x := range jcts {
		t += x
	}
	sum.MeanJCT = t / float64(len(jcts))
	sum.MedianJCT = Quantile(jcts, 0.5)
	sum.P95JCT = Quantile(jcts, 0.95)
	sum.MeanQueue = q / float64(len(jcts))
	return sum
}

// Quantile is the q-quantile of sorted xs by linear interpolation between closest ranks.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}
