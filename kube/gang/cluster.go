package gang

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

// Config is NetPack's model of a Kubernetes cluster beyond what the objects say, and the policy.
type Config struct {
	// Policy is the netpack placer (default "netpack"; netpack.PolicyNames lists them).
	Policy string
	// NICGbps is a node's NIC where it has no NICAnnotation (default 100); UplinkGbps each
	// rack's uplink (default 200); CoreGbps the core (default: all uplinks together).
	NICGbps, UplinkGbps, CoreGbps float64
	// INAMemoryBytes is each ToR's aggregator memory and RTT how long a slot is held (defaults
	// netpack's): memory / RTT is a ToR's INA capacity.
	INAMemoryBytes float64
	RTT            time.Duration
}

// WithDefaults fills what c leaves zero.
func (c Config) WithDefaults() Config {
	c.Policy = cmp.Or(c.Policy, "netpack")
	c.NICGbps = cmp.Or(c.NICGbps, 100)
	c.UplinkGbps = cmp.Or(c.UplinkGbps, 200)
	c.INAMemoryBytes = cmp.Or(c.INAMemoryBytes, netpack.DefaultINAMemoryBytes)
	c.RTT = cmp.Or(c.RTT, time.Duration(netpack.DefaultRTTSec*float64(time.Second)))
	return c
}

// Validate reports the first impossible value.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if !slices.Contains(netpack.PolicyNames(), c.Policy) {
		return fmt.Errorf("policy %q: want one of %v", c.Policy, netpack.PolicyNames())
	}
	for name, v := range map[string]float64{"nicGbps": c.NICGbps, "uplinkGbps": c.UplinkGbps, "inaMemoryBytes": c.INAMemoryBytes} {
		if !(v > 0) {
			return fmt.Errorf("%s %v: want a positive number", name, v)
		}
	}
	if c.CoreGbps < 0 || c.RTT <= 0 {
		return fmt.Errorf("coreGbps %v, rtt %v: want coreGbps >= 0 and a positive rtt", c.CoreGbps, c.RTT)
	}
	return nil
}

// unlabelledRack is the rack of nodes without RackLabel: NetPack places jobs there with INA off
// (no ToR is known to aggregate for them).
const unlabelledRack = "~unlabelled"

// View is the cluster as NetPack sees it: a machine per node with GPUs (racks by RackLabel, sorted
// by name, machines by node name within a rack, as the scheduler service models a topology.json),
// and the INA jobs already on it.
type View struct {
	Cluster *netpack.Cluster
	Nodes   []string                     // machine -> node name
	Machine map[string]netpack.MachineID // node name -> machine
	// Unlabelled are the nodes without a rack label.
	Unlabelled map[string]bool
	// Running are the placements of the gangs with pods on nodes, by gang.
	Running map[Key]netpack.Placement
	// Skipped says why a running gang was left out of Running (a stale or odd view).
	Skipped []error
	// Refused are the nodes Exclude took out of the gang's choice, with why.
	Refused map[string]string
	// sorted is Running's placements by job ID, where a Live made the view (Place need not
	// sort them again for each gang).
	sorted []netpack.Placement
	// live made the view; its planner places on it (Live.plan).
	live *Live
}

// GPUs is what a resource list holds of GPUResource.
func GPUs(rl v1.ResourceList) int {
	q, ok := rl[GPUResource]
	if !ok {
		return 0
	}
	return int(q.Value())
}

// PodGPUs is what a pod requests of GPUResource (limits where a request is absent, as Kubernetes
// defaults extended resources).
func PodGPUs(p *v1.Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		g := GPUs(c.Resources.Requests)
		if g == 0 {
			g = GPUs(c.Resources.Limits)
		}
		n += g
	}
	return n
}

// NewView builds the view from every node and every pod on a node (bound or assumed). Pods of
// gangs count as their gang's running placement; other pods' GPUs are taken off their node.
func NewView(cfg Config, nodes []*v1.Node, assigned []*v1.Pod) (*View, error) {
	cfg = cfg.WithDefaults()
	other := map[string]int{} // node -> GPUs held by pods of no gang
	for _, p := range assigned {
		if _, ok := KeyOf(p); !ok && !terminal(p) {
			other[p.Spec.NodeName] += PodGPUs(p)
		}
	}
	v, err := layout(cfg, nodes, other)
	if err != nil {
		return nil, err
	}
	v.running(assigned)
	return v, nil
}

// layout is the view of nodes without running gangs: a machine per node with GPUs left by pods
// of no gang (other: node -> their GPUs), racks and machines in NewView's order.
func layout(cfg Config, nodes []*v1.Node, other map[string]int) (*View, error) {
	racks := map[string][]*v1.Node{}
	v := &View{Cluster: &netpack.Cluster{Name: "kubernetes"}, Machine: map[string]netpack.MachineID{},
		Unlabelled: map[string]bool{}, Running: map[Key]netpack.Placement{}}
	for _, n := range nodes {
		// A node whose GPUs pods of no gang hold all of is no machine for NetPack (nor one
		// without GPUs at all).
		if GPUs(n.Status.Allocatable)-other[n.Name] <= 0 {
			continue
		}
		r := n.Labels[RackLabel]
		if r == "" {
			r = unlabelledRack
			v.Unlabelled[n.Name] = true
		}
		racks[r] = append(racks[r], n)
	}
	if len(racks) == 0 {
		return nil, fmt.Errorf("no node has allocatable %s", GPUResource)
	}
	var core float64
	for _, r := range slices.Sorted(maps.Keys(racks)) {
		ns := racks[r]
		slices.SortFunc(ns, func(a, b *v1.Node) int { return cmp.Compare(a.Name, b.Name) })
		rk := netpack.Rack{Name: r, First: netpack.MachineID(len(v.Nodes)), Count: len(ns), UplinkGbps: cfg.UplinkGbps,
			INAMemoryBytes: cfg.INAMemoryBytes, RTTSec: cfg.RTT.Seconds()}
		if r == unlabelledRack {
			rk.INAMemoryBytes = 0
		}
		core += rk.UplinkGbps
		for _, n := range ns {
			nic := cfg.NICGbps
			if s, ok := n.Annotations[NICAnnotation]; ok {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil || !(f > 0) {
					return nil, fmt.Errorf("node %s: annotation %s=%q: want a positive number of Gbit/s", n.Name, NICAnnotation, s)
				}
				nic = f
			}
			v.Machine[n.Name] = netpack.MachineID(len(v.Nodes))
			v.Nodes = append(v.Nodes, n.Name)
			v.Cluster.Machines = append(v.Cluster.Machines, netpack.Machine{Rack: len(v.Cluster.Racks),
				GPUs: GPUs(n.Status.Allocatable) - other[n.Name], NICGbps: nic})
		}
		v.Cluster.Racks = append(v.Cluster.Racks, rk)
	}
	v.Cluster.CoreGbps = cmp.Or(cfg.CoreGbps, core)
	if err := v.Cluster.Validate(); err != nil {
		return nil, err
	}
	return v, nil
}

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// running groups the gangs' assigned pods into placements: workers' GPUs on their machines, the
// PS on its pod's machine (else the machine with most of the job's GPUs).
func (v *View) running(assigned []*v1.Pod) {
	type acc struct {
		gpus  map[netpack.MachineID]int
		ps    netpack.MachineID
		model netpack.Model
		ina   bool
	}
	jobs := map[Key]*acc{}
	for _, p := range assigned {
		k, ok := KeyOf(p)
		if !ok || terminal(p) || p.DeletionTimestamp != nil {
			continue
		}
		m, ok := v.Machine[p.Spec.NodeName]
		if !ok {
			continue // a node without GPUs: no gradient stream NetPack models
		}
		a := jobs[k]
		if a == nil {
			md, _ := ModelOf(p) // a pod with a bad model was never planned; take the default
			a = &acc{gpus: map[netpack.MachineID]int{}, ps: -1, model: md, ina: p.Annotations[INAAnnotation] != "false"}
			jobs[k] = a
		}
		if p.Labels[RoleLabel] == RolePS {
			a.ps = m
			continue
		}
		a.gpus[m] += PodGPUs(p)
	}
	for k, a := range jobs {
		pl := netpack.Placement{INA: a.ina, PS: a.ps}
		total, best := 0, netpack.MachineID(-1)
		for _, m := range slices.Sorted(maps.Keys(a.gpus)) {
			if a.gpus[m] == 0 {
				continue
			}
			pl.Workers = append(pl.Workers, netpack.Worker{Machine: m, GPUs: a.gpus[m]})
			total += a.gpus[m]
			if best < 0 || a.gpus[m] > a.gpus[best] {
				best = m
			}
		}
		if total == 0 {
			continue // only its PS is placed so far
		}
		if pl.PS < 0 {
			pl.PS = best
		}
		pl.Job = &netpack.Job{ID: k.String(), GPUs: total, Model: a.model, Iterations: 1}
		v.Running[k] = pl
	}
}

// ModelOf is the model profile a pod's ModelAnnotation names (default resnet50).
func ModelOf(p *v1.Pod) (netpack.Model, error) {
	name := cmp.Or(p.Annotations[ModelAnnotation], "resnet50")
	m, ok := netpack.Profile(name)
	if !ok {
		return netpack.Model{}, fmt.Errorf("pod %s/%s: annotation %s=%q: unknown model (have %v)", p.Namespace, p.Name, ModelAnnotation, name, netpack.ProfileNames())
	}
	return m, nil
}
