package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Whole-ITP statistics (69,351 jobs, 10 clusters) from shared/traces/README.md: the share of jobs
// and of GPU-time by GPU count, and duration quantiles.
var (
	itpSizes       = []int{1, 2, 4, 8, 16, 32, 64}
	itpJobShare    = []float64{83.2, 2.1, 3.4, 10.1, 0.55, 0.51, 0.10}
	itpGPUTimeShr  = []float64{12.7, 0.8, 7.3, 49.2, 6.9, 17.3, 5.9}
	itpDurQuantile = [][2]float64{ // (cumulative probability, seconds)
		{0, 600}, // the ITP release has no job under 600 s
		{0.10, 1342}, {0.50, 10537}, {0.90, 28787}, {0.99, 210241},
		{1, 935816}, // longest job in the cluster04 week
	}
)

// maxDuration caps stretched durations at the longest job of the cluster04 week.
var maxDuration = itpDurQuantile[len(itpDurQuantile)-1][1]

// ITPInterArrivalCV is the coefficient of variation of inter-arrival times in the cluster04 week.
const ITPInterArrivalCV = 3.9

// SynthConfig parameterises the synthetic generator.
type SynthConfig struct {
	Jobs int
	// TotalGPUs and Load set the arrival rate: the offered GPU-time per second is Load x TotalGPUs.
	// With TotalGPUs = 0, JobsPerHour is used instead.
	TotalGPUs   int
	Load        float64
	JobsPerHour float64
	// MaxGPUs drops job sizes larger than this (0: keep all), renormalising the mix, and caps
	// sizes after GPUScale.
	MaxGPUs int
	// DurationScale multiplies every duration (1 if zero); small values make short test traces.
	DurationScale float64
	// GPUScale multiplies every job's GPU count (1 if zero), capped at MaxGPUs: larger clusters
	// with larger jobs keep the number of concurrent jobs, and so the cost of a run, bounded.
	GPUScale int
}

// Synthetic draws a trace calibrated to the whole-ITP statistics: GPU counts from the published
// job shares; durations from the published quantiles (log-linear between them), stretched per size
// so that each size's share of GPU-time matches the published one in expectation (then capped at
// the longest job of the cluster04 week, 935,816 s, which trims that slightly); arrivals from a
// two-phase hyperexponential with the cluster04 week's inter-arrival CV of 3.9. Deterministic per seed.
func Synthetic(cfg SynthConfig, seed uint64) (*Trace, error) {
	if cfg.Jobs <= 0 {
		return nil, fmt.Errorf("synthetic: jobs must be positive, got %d", cfg.Jobs)
	}
	sizes, share, stretch := sizeMix(cfg.MaxGPUs)
	if len(sizes) == 0 {
		return nil, fmt.Errorf("synthetic: no job size fits max %d GPUs", cfg.MaxGPUs)
	}
	scale := cfg.DurationScale
	if scale == 0 {
		scale = 1
	}
	meanGPUTime := 0.0
	for i := range sizes {
		meanGPUTime += share[i] * float64(sizes[i]) * stretch[i]
	}
	gscale := max(1, cfg.GPUScale)
	meanGPUTime *= meanDuration() * scale * float64(gscale)
	var rate float64 // jobs per second
	switch {
	case cfg.TotalGPUs > 0 && cfg.Load > 0:
		rate = cfg.Load * float64(cfg.TotalGPUs) / meanGPUTime
	case cfg.JobsPerHour > 0:
		rate = cfg.JobsPerHour / 3600
	default:
		return nil, fmt.Errorf("synthetic: set TotalGPUs and Load, or JobsPerHour")
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e65747061636b))
	ia := newHyperExp(1/rate, ITPInterArrivalCV)
	t := &Trace{Jobs: make([]Job, cfg.Jobs)}
	now := 0.0
	for i := range t.Jobs {
		k := pick(rng, share)
		t.Jobs[i] = Job{ // GPUs capped below, after the draw, so the random stream is the same
			ID:       fmt.Sprintf("synth-%06d", i),
			Submit:   math.Round(now),
			GPUs:     sizes[k] * gscale,
			Duration: math.Max(1, math.Round(min(durationQuantile(rng.Float64())*stretch[k], maxDuration)*scale)),
		}
		if cfg.MaxGPUs > 0 {
			t.Jobs[i].GPUs = min(t.Jobs[i].GPUs, cfg.MaxGPUs)
		}
		now += ia.draw(rng)
	}
	return t, nil
}

// sizeMix returns the sizes kept, their job shares (normalised) and duration stretch factors
// normalised so the job-weighted mean stretch is 1.
func sizeMix(maxGPUs int) (sizes []int, share, stretch []float64) {
	var sum float64
	for i, s := range itpSizes {
		if maxGPUs > 0 && s > maxGPUs {
			continue
		}
		sizes = append(sizes, s)
		share = append(share, itpJobShare[i])
		// Mean duration of size s is proportional to GPU-time share / (s x job share).
		stretch = append(stretch, itpGPUTimeShr[i]/(float64(s)*itpJobShare[i]))
		sum += itpJobShare[i]
	}
	var mean float64
	for i := range share {
		share[i] /= sum
		mean += share[i] * stretch[i]
	}
	for i := range stretch {
		stretch[i] /= mean
	}
	return sizes, share, stretch
}

func pick(rng *rand.Rand, w []float64) int {
	u := rng.Float64()
	for i, p := range w {
		if u < p {
			return i
		}
		u -= p
	}
	return len(w) - 1
}

// durationQuantile is the inverse CDF through the published quantiles, log-linear in between.
func durationQuantile(u float64) float64 {
	q := itpDurQuantile
	for i := 1; i < len(q); i++ {
		if u <= q[i][0] {
			f := (u - q[i-1][0]) / (q[i][0] - q[i-1][0])
			return math.Exp(math.Log(q[i-1][1]) + f*(math.Log(q[i][1])-math.Log(q[i-1][1])))
		}
	}
	return q[len(q)-1][1]
}

// meanDuration integrates durationQuantile over u in closed form per segment.
func meanDuration() float64 {
	q := itpDurQuantile
	var m float64
	for i := 1; i < len(q); i++ {
		a, b := q[i-1][1], q[i][1]
		w := q[i][0] - q[i-1][0]
		if a == b {
			m += w * a
			continue
		}
		m += w * (b - a) / math.Log(b/a)
	}
	return m
}

// hyperExp is a balanced-means two-phase hyperexponential distribution with a given mean and CV.
type hyperExp struct{ p, r1, r2 float64 }

func newHyperExp(mean, cv float64) hyperExp {
	c2 := cv * cv
	p := 0.5 * (1 + math.Sqrt((c2-1)/(c2+1)))
	return hyperExp{p: p, r1: 2 * p / mean, r2: 2 * (1 - p) / mean}
}

func (h hyperExp) draw(rng *rand.Rand) float64 {
	if rng.Float64() < h.p {
		return rng.ExpFloat64() / h.r1
	}
	return rng.ExpFloat64() / h.r2
}
