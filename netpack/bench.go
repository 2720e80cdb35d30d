package netpack

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// BenchConfig is one placement-latency measurement.
type BenchConfig struct {
	Policy   string
	Options  Options
	Machines int // rounded to whole racks of MachinesPerRack
	// Jobs: with Batch, one Schedule call places Jobs waiting jobs; otherwise Jobs arrive one per
	// Schedule call, random running jobs departing to keep the cluster at most Busy busy.
	Jobs  int
	Batch bool
	// Busy is the fraction of GPUs running jobs before timing starts (filled by one untimed batch
	// of synthetic jobs placed by the same policy).
	Busy float64
	// GPUs, if > 0, overrides every timed job's GPU demand (e.g. 32 to time multi-machine placement).
	GPUs int
	Seed uint64
}

// Shape of the benchmark clusters: racks of 20 machines with 8 GPUs (160 GPUs per rack).
const (
	benchMachinesPerRack = 20
	benchGPUsPerMachine  = 8
)

// BenchResult is the outcome of RunBench.
type BenchResult struct {
	BenchConfig
	Placed  int
	Elapsed time.Duration // wall time spent in Schedule
	CPU     time.Duration // CPU time of the scheduling thread in Schedule (Linux; 0 elsewhere)
}

// CPUPerJob is the mean CPU time per placed job.
func (r BenchResult) CPUPerJob() time.Duration {
	if r.Placed == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Placed)
}

// PerJob is the mean placement latency per placed job.
func (r BenchResult) PerJob() time.Duration {
	if r.Placed == 0 {
		return 0
	}
	return r.Elapsed / time.Duration(r.Placed)
}

// RunBench measures Schedule on a uniform cluster with synthetic (ITP-shaped) jobs.
func RunBench(cfg BenchConfig) (BenchResult, error) {
	racks := max(1, (cfg.Machines+benchMachinesPerRack-1)/benchMachinesPerRack)
	c, err := Uniform(UniformSpec{Racks: racks, MachinesPerRack: min(cfg.Machines, benchMachinesPerRack), GPUsPerMachine: benchGPUsPerMachine})
	if err != nil {
		return BenchResult{}, err
	}
	pol, err := NewPolicy(cfg.Policy, cfg.Options)
	if err != nil {
		return BenchResult{}, err
	}
	res := BenchResult{BenchConfig: cfg}
	st := NewState(c)
	if err := prefill(st, pol, cfg); err != nil {
		return res, err
	}
	jobs := SyntheticJobs(cfg.Seed, cfg.Jobs)
	if cfg.GPUs > 0 {
		for _, j := range jobs {
			j.GPUs = cfg.GPUs
		}
	}
	if cfg.Batch {
		var ps []Placement
		t0 := time.Now()
		res.CPU = threadCPU(func() { ps = pol.Schedule(st, jobs) })
		res.Elapsed = time.Since(t0)
		for _, p := range ps {
			if err := st.Add(p); err != nil {
				return res, fmt.Errorf("%s returned a placement that does not apply: %w", cfg.Policy, err)
			}
		}
		res.Placed = len(ps)
		return res, nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	target := int(max(cfg.Busy, 0.7) * float64(c.TotalGPUs()))
	for _, j := range jobs {
		for st.TotalGPUs()-st.TotalFreeGPUs() > target || st.TotalFreeGPUs() < j.GPUs {
			if len(st.Running) == 0 {
				break
			}
			st.Remove(st.Running[rng.IntN(len(st.Running))].Job.ID)
		}
		var ps []Placement
		t0 := time.Now()
		res.CPU += threadCPU(func() { ps = pol.Schedule(st, []*Job{j}) })
		res.Elapsed += time.Since(t0)
		for _, p := range ps {
			if err := st.Add(p); err != nil {
				return res, fmt.Errorf("%s returned a placement that does not apply: %w", cfg.Policy, err)
			}
			res.Placed++
		}
	}
	return res, nil
}

// prefill starts synthetic jobs until cfg.Busy of the GPUs are in use.
func prefill(st *State, pol Policy, cfg BenchConfig) error {
	want := int(cfg.Busy * float64(st.TotalGPUs()))
	var jobs []*Job
	sum := 0
	for i, j := range SyntheticJobs(cfg.Seed+1000, want+1) {
		if sum+j.GPUs > want {
			break
		}
		j.ID = fmt.Sprintf("bg-%d", i)
		jobs = append(jobs, j)
		sum += j.GPUs
	}
	for _, p := range pol.Schedule(st, jobs) {
		if err := st.Add(p); err != nil {
			return fmt.Errorf("%s returned a placement that does not apply: %w", cfg.Policy, err)
		}
	}
	return nil
}
