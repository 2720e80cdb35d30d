package extender

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/inapack/inapack/netpack"
)

// Labels and annotations the extender reads. A job's pods share JobLabel's value (in one
// namespace); the others are optional.
const (
	DefaultJobLabel  = "inapack.io/job"
	DefaultRackLabel = "inapack.io/rack"
	DefaultGPU       = v1.ResourceName("nvidia.com/gpu")
	// JobGPUsAnnotation on a pod: the whole job's GPUs (default: the pod's own request).
	JobGPUsAnnotation = "inapack.io/job-gpus"
	// ModelAnnotation on a pod: the job's model profile (default resnet50).
	ModelAnnotation = "inapack.io/model"
	// NICAnnotation on a node: its NIC in Gbit/s (default Config.NICGbps).
	NICAnnotation = "inapack.io/nic-gbps"
)

// Config is the extender's model of the cluster and what it reads from objects.
type Config struct {
	JobLabel    string          // default DefaultJobLabel
	RackLabel   string          // default DefaultRackLabel; nodes without it form rack "unlabelled"
	GPUResource v1.ResourceName // default DefaultGPU
	Policy      string          // netpack placer (default "netpack")
	// Link capacities in Gbit/s (defaults 100 NIC, 200 per rack uplink; core: every uplink) and
	// each ToR's INA memory and slot hold time (defaults 256 KiB, 20 µs), as in netpack's cluster
	// files.
	NICGbps, UplinkGbps, CoreGbps float64
	INAMemoryBytes                float64
	RTT                           time.Duration
}

func (c Config) withDefaults() Config {
	c.JobLabel = cmp.Or(c.JobLabel, DefaultJobLabel)
	c.RackLabel = cmp.Or(c.RackLabel, DefaultRackLabel)
	c.GPUResource = cmp.Or(c.GPUResource, DefaultGPU)
	c.Policy = cmp.Or(c.Policy, "netpack")
	c.NICGbps = cmp.Or(c.NICGbps, 100)
	c.UplinkGbps = cmp.Or(c.UplinkGbps, 200)
	c.INAMemoryBytes = cmp.Or(c.INAMemoryBytes, netpack.DefaultINAMemoryBytes)
	c.RTT = cmp.Or(c.RTT, time.Duration(netpack.DefaultRTTSec*float64(time.Second)))
	return c
}

// model is the cluster NetPack sees: a machine per node with GPUs, racks by the rack label.
type model struct {
	c       *netpack.Cluster
	machine map[string]netpack.MachineID // node name -> machine
	nodes   []string                     // machine -> node name
}

func (cfg Config) gpus(rl v1.ResourceList) int {
	q, ok := rl[cfg.GPUResource]
	if !ok {
		return 0
	}
	return int(q.Value())
}

func (cfg Config) buildModel(nodes []v1.Node) (*model, error) {
	racks := map[string][]*v1.Node{}
	for i := range nodes {
		n := &nodes[i]
		if cfg.gpus(n.Status.Allocatable) <= 0 {
			continue
		}
		r := cmp.Or(n.Labels[cfg.RackLabel], "unlabelled")
		racks[r] = append(racks[r], n)
	}
	if len(racks) == 0 {
		return nil, fmt.Errorf("no node has allocatable %s", cfg.GPUResource)
	}
	m := &model{c: &netpack.Cluster{Name: "kubernetes"}, machine: map[string]netpack.MachineID{}}
	for _, r := range slices.Sorted(maps.Keys(racks)) {
		ns := racks[r]
		slices.SortFunc(ns, func(a, b *v1.Node) int { return cmp.Compare(a.Name, b.Name) })
		m.c.Racks = append(m.c.Racks, netpack.Rack{Name: r, First: netpack.MachineID(len(m.nodes)), Count: len(ns),
			UplinkGbps: cfg.UplinkGbps, INAMemoryBytes: cfg.INAMemoryBytes, RTTSec: cfg.RTT.Seconds()})
		for _, n := range ns {
			nic := cfg.NICGbps
			if s, ok := n.Annotations[NICAnnotation]; ok {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || !(v > 0) {
					return nil, fmt.Errorf("node %s: annotation %s=%q: want a positive number of Gbit/s", n.Name, NICAnnotation, s)
				}
				nic = v
			}
			m.machine[n.Name] = netpack.MachineID(len(m.nodes))
			m.nodes = append(m.nodes, n.Name)
			m.c.Machines = append(m.c.Machines, netpack.Machine{Rack: len(m.c.Racks) - 1, GPUs: cfg.gpus(n.Status.Allocatable), NICGbps: nic})
		}
	}
	m.c.CoreGbps = cmp.Or(cfg.CoreGbps, cfg.UplinkGbps*float64(len(m.c.Racks)))
	return m, m.c.Validate()
}

// podGPUs is what a pod requests of the GPU resource (its containers' requests; limits where a
// request is absent, as Kubernetes defaults extended resources).
func (cfg Config) podGPUs(p *v1.Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		g := cfg.gpus(c.Resources.Requests)
		if g == 0 {
			g = cfg.gpus(c.Resources.Limits)
		}
		n += g
	}
	return n
}

// jobKey identifies a pod's job: namespace and label value; "" for a pod of no job.
func (cfg Config) jobKey(p *v1.Pod) string {
	v := p.Labels[cfg.JobLabel]
	if v == "" {
		return ""
	}
	return p.Namespace + "/" + v
}

// jobModel is the job's model profile from its pod's annotation.
func jobModel(p *v1.Pod) (netpack.Model, error) {
	name := cmp.Or(p.Annotations[ModelAnnotation], "resnet50")
	m, ok := netpack.Profile(name)
	if !ok {
		return m, fmt.Errorf("pod %s/%s: annotation %s=%q: unknown model (have %v)", p.Namespace, p.Name, ModelAnnotation, name, netpack.ProfileNames())
	}
	return m, nil
}

// running is the jobs already on nodes: the pods of each job (bound, not finished) as one
// placement, its PS on the node with most of its GPUs. skip is the pod being scheduled.
func (cfg Config) running(m *model, pods []v1.Pod, skip *v1.Pod) (map[string]netpack.Placement, error) {
	type acc struct {
		gpus  map[netpack.MachineID]int
		model netpack.Model
	}
	jobs := map[string]*acc{}
	for i := range pods {
		p := &pods[i]
		key := cfg.jobKey(p)
		if key == "" || p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
			(skip != nil && p.UID == skip.UID) {
			continue
		}
		mid, ok := m.machine[p.Spec.NodeName]
		if !ok {
			continue // on a node without GPUs: no gradient stream NetPack models
		}
		a := jobs[key]
		if a == nil {
			md, err := jobModel(p)
			if err != nil {
				return nil, err
			}
			a = &acc{gpus: map[netpack.MachineID]int{}, model: md}
			jobs[key] = a
		}
		a.gpus[mid] += max(cfg.podGPUs(p), 1)
	}
	out := map[string]netpack.Placement{}
	for key, a := range jobs {
		p := netpack.Placement{INA: true}
		total, best := 0, netpack.MachineID(-1)
		for _, mid := range slices.Sorted(maps.Keys(a.gpus)) {
			g := a.gpus[mid]
			p.Workers = append(p.Workers, netpack.Worker{Machine: mid, GPUs: g})
			total += g
			if best < 0 || g > a.gpus[best] {
				best = mid
			}
		}
		p.PS = best
		p.Job = &netpack.Job{ID: key, GPUs: total, Model: a.model, Iterations: 1}
		out[key] = p
	}
	return out, nil
}
