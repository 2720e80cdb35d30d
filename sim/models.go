package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/sim/trace"
)

// Bucket assigns a model to jobs whose GPU-hours (GPUs x duration / 3600) are below MaxGPUHours.
type Bucket struct {
	MaxGPUHours float64
	Model       string
}

// DefaultBuckets follows Pollux's rule for Philly (GPU-time buckets), mapped onto netpack's
// shipped profiles: < 1 GPU-h a small CNN (resnet50), 1-10 speech/BERT (bert-base), 10-100
// detection (resnet152, a detection-scale backbone), >= 100 ImageNet-scale (vgg16, the
// communication-heavy model of ATP's evaluation).
var DefaultBuckets = []Bucket{
	{1, "resnet50"},
	{10, "bert-base"},
	{100, "resnet152"},
	{math.Inf(1), "vgg16"},
}

// MixModel assigns a trace job one of the named profiles by a hash of its id: uniform over the
// names and independent of the job's size or length (the evaluation's image-model mix). A nonzero
// seed salts the hash, so each seed is another independent draw of the same mix; seed 0 hashes
// the id alone.
func MixModel(names []string, j trace.Job, seed uint64) (netpack.Model, error) {
	if len(names) == 0 {
		return netpack.Model{}, fmt.Errorf("model mix: no profile named")
	}
	h := fnv.New32a()
	if seed != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], seed)
		h.Write(b[:])
	}
	h.Write([]byte(j.ID))
	name := names[h.Sum32()%uint32(len(names))]
	m, ok := netpack.Profile(name)
	if !ok {
		return netpack.Model{}, fmt.Errorf("model mix: no profile %q (have %v)", name, netpack.ProfileNames())
	}
	return m, nil
}

// ModelFor returns the bucket model for a trace job.
func ModelFor(b []Bucket, j trace.Job) (netpack.Model, error) {
	gh := float64(j.GPUs) * j.Duration / 3600
	for _, bk := range b {
		if gh < bk.MaxGPUHours {
			m, ok := netpack.Profile(bk.Model)
			if !ok {
				return netpack.Model{}, fmt.Errorf("model bucket: no profile %q (have %v)", bk.Model, netpack.ProfileNames())
			}
			return m, nil
		}
	}
	return netpack.Model{}, fmt.Errorf("model bucket: no bucket for %.1f GPU-h", gh)
}

// Isolated computes a job's iteration rate alone in an empty cluster under the reference
// placement: its GPUs packed onto as few machines as possible, in consecutive racks from rack 0,
// the PS on the first worker machine, INA on, in the network model. This stands for "the trace's
// hardware": the trace recorded the job's run time there, so iterations = duration x isolated
// rate, and a job that runs alone in the simulator (same network) takes exactly its trace duration.
type Isolated struct {
	c     *netpack.Cluster
	n     Network
	cache map[isoKey]float64
}

type isoKey struct {
	model string
	gpus  int
}

// NewIsolated prepares isolated-rate lookups on the physical cluster c with network n.
func NewIsolated(c *netpack.Cluster, n Network) *Isolated {
	return &Isolated{c: c, n: n, cache: map[isoKey]float64{}}
}

// Rate is iterations per second of a job of this model and size alone in the cluster.
func (iso *Isolated) Rate(m netpack.Model, gpus int) (float64, error) {
	k := isoKey{m.Name, gpus}
	if r, ok := iso.cache[k]; ok {
		return r, nil
	}
	j := &netpack.Job{ID: "isolated", GPUs: gpus, Model: m, Iterations: 1}
	var ws []netpack.Worker
	left := gpus
	for i := range iso.c.Machines {
		if left == 0 {
			break
		}
		g := min(left, iso.c.Machines[i].GPUs)
		ws = append(ws, netpack.Worker{Machine: netpack.MachineID(i), GPUs: g})
		left -= g
	}
	if left > 0 {
		return 0, fmt.Errorf("job of %d GPUs does not fit cluster %s (%d GPUs)", gpus, iso.c.Name, iso.c.TotalGPUs())
	}
	r := 1 / m.ComputeSec
	if len(ws) > 1 {
		f := newFluid(iso.c, iso.n)
		if err := f.add(netpack.Placement{Job: j, Workers: ws, PS: ws[0].Machine, INA: true}, 0, -1); err != nil {
			return 0, err
		}
		f.settle()
		fr, _ := f.rateOf(j.ID)
		r = fr.IterPerSec
	}
	if !(r > 0) {
		return 0, fmt.Errorf("isolated rate of %s on %d GPUs is %v", m.Name, gpus, r)
	}
	iso.cache[k] = r
	return r, nil
}

// Jobs converts trace jobs into netpack jobs: model by assign, iterations = duration x isolated
// rate (at least 1). Jobs larger than the cluster are returned in tooBig, not converted.
func Jobs(tr []trace.Job, assign func(trace.Job) (netpack.Model, error), iso *Isolated) (jobs []*netpack.Job, tooBig []trace.Job, err error) {
	total := iso.c.TotalGPUs()
	seen := make(map[string]bool, len(tr))
	for _, tj := range tr {
		if seen[tj.ID] {
			return nil, nil, fmt.Errorf("job id %q appears twice in the trace", tj.ID)
		}
		seen[tj.ID] = true
		if tj.GPUs > total {
			tooBig = append(tooBig, tj)
			continue
		}
		m, err := assign(tj)
		if err != nil {
			return nil, nil, err
		}
		r, err := iso.Rate(m, tj.GPUs)
		if err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, &netpack.Job{ID: tj.ID, GPUs: tj.GPUs, Model: m, Submit: tj.Submit,
			Iterations: max(1, int(math.Round(tj.Duration*r)))})
	}
	return jobs, tooBig, nil
}
