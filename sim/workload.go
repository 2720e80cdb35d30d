package sim

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim/trace"
)

// Setup is everything about a run except the policy.
type Setup struct {
	Cluster *netpack.Cluster // physical cluster; the policy sees EffectiveCluster(Cluster, Network.Slots, INA)
	Network Network
	INA     bool
	Mode    netpack.Mode // the estimator NetPack scores with (Joint, or Separate for the ablation)
	// Admission and Priority are the same for every policy (netpack.Options).
	Admission string
	Priority  netpack.PriorityRule
	Interval  float64  // seconds between scheduling rounds
	Warmup    float64  // seconds; jobs submitted earlier are left out of the summary
	Buckets   []Bucket // model assignment by GPU-time; nil means DefaultBuckets
	Mix       []string // if set, models are assigned by MixModel from these profiles instead
	MixSeed   uint64   // MixModel's seed (0: the job id alone decides)
	// GradScale multiplies every model's gradient bytes (0 or 1: as profiled): the gradient
	// against the compute it overlaps, so how much the network matters, with compute unchanged.
	GradScale float64
	// Estimate measures netpack's estimator against the simulator in every run (Config.Estimate).
	Estimate bool
}

// Workload is a trace converted for one setup; several policies can run on it concurrently.
type Workload struct {
	Setup   Setup
	Cluster *netpack.Cluster // physical (Setup.Cluster)
	Jobs    []*netpack.Job
	TooBig  []trace.Job // jobs larger than the cluster, left out
}

// Prepare converts a trace for a setup.
func Prepare(s Setup, tr *trace.Trace) (*Workload, error) {
	if err := s.Network.Validate(); err != nil {
		return nil, err
	}
	if err := s.Cluster.Validate(); err != nil {
		return nil, err
	}
	if s.Buckets == nil {
		s.Buckets = DefaultBuckets
	}
	ref := s.Network
	ref.Slots = s.Network.withDefaults().Slots.Reference()
	assign := func(j trace.Job) (netpack.Model, error) { return ModelFor(s.Buckets, j) }
	if len(s.Mix) > 0 {
		assign = func(j trace.Job) (netpack.Model, error) { return MixModel(s.Mix, j, s.MixSeed) }
	}
	if g := s.GradScale; g != 0 && g != 1 {
		if !(g > 0) || math.IsInf(g, 0) {
			return nil, fmt.Errorf("sim: gradient scale must be a positive number, got %v", g)
		}
		base := assign
		assign = func(j trace.Job) (netpack.Model, error) {
			m, err := base(j)
			m.GradientBytes *= g
			return m, err
		}
	}
	jobs, big, err := Jobs(tr.Jobs, assign, NewIsolated(s.Cluster, ref))
	if err != nil {
		return nil, err
	}
	return &Workload{Setup: s, Cluster: s.Cluster, Jobs: jobs, TooBig: big}, nil
}

// Run simulates the workload under the named policy.
func (w *Workload) Run(policy string, progress func(done, total int)) (*Result, error) {
	return w.RunEstimating(policy, w.Setup.Estimate, progress)
}

// RunEstimating is Run with the estimator's error measured (Config.Estimate) or not, whatever
// the setup says.
func (w *Workload) RunEstimating(policy string, estimate bool, progress func(done, total int)) (*Result, error) {
	p, err := netpack.NewPolicy(policy, netpack.Options{Mode: w.Setup.Mode, NoINA: !w.Setup.INA,
		Admission: w.Setup.Admission, Priority: w.Setup.Priority})
	if err != nil {
		return nil, err
	}
	res, err := Run(Config{Cluster: w.Cluster, Network: w.Setup.Network, NoINA: !w.Setup.INA, Policy: p,
		Interval: w.Setup.Interval, Warmup: w.Setup.Warmup, Estimate: estimate, Progress: progress}, w.Jobs)
	if err != nil {
		return nil, err
	}
	// Reports key results by the registry name; the policy's own Name may carry its options.
	res.Policy = policy
	return res, nil
}

// RunAll simulates every named policy, at most GOMAXPROCS at a time; results follow names.
// progress, if set, receives the total completions across all runs.
func (w *Workload) RunAll(names []string, progress func(done, total int)) ([]*Result, error) {
	out := make([]*Result, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	done, total := 0, len(names)*len(w.Jobs)
	tick := func(int, int) {
		mu.Lock()
		defer mu.Unlock()
		done++
		progress(done, total)
	}
	if progress == nil {
		tick = nil
	}
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = w.Run(n, tick)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("policy %s: %w", n, errs[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DefaultWarmup is the warm-up the commands and the evaluation leave out of a trace's summary:
// the start of the arrival window, which begins with an empty cluster; a seventh (a day of a
// week) for traces spanning three days or more, else a tenth.
func DefaultWarmup(tr *trace.Trace) float64 {
	if tr.Span() >= 3*86400 {
		return tr.Span() / 7
	}
	return tr.Span() / 10
}
