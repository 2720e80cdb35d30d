package gang

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// Key names a gang: a PodGroup (pods linked by spec.schedulingGroup) or, where the cluster lacks
// the Workload API, the pods of a namespace sharing JobLabel's value.
type Key struct {
	Namespace, Name string
	// ByLabel: the gang is a JobLabel gang, not a PodGroup.
	ByLabel bool
}

func (k Key) String() string {
	if k.ByLabel {
		return k.Namespace + "/" + JobLabel + "=" + k.Name
	}
	return k.Namespace + "/" + k.Name
}

// KeyOf is the gang of a pod; false for a pod of no gang (NetPack leaves it alone).
func KeyOf(p *v1.Pod) (Key, bool) {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return Key{Namespace: p.Namespace, Name: *sg.PodGroupName}, true
	}
	if v := p.Labels[JobLabel]; v != "" {
		return Key{Namespace: p.Namespace, Name: v, ByLabel: true}, true
	}
	return Key{}, false
}

// Gang is a training job's pods: one PS and its workers.
type Gang struct {
	Key      Key
	MinCount int
	PS       *v1.Pod
	Workers  []*v1.Pod // by name
	Model    netpack.Model
}

// ErrIncomplete: fewer pods than the gang's minimum exist yet; the gang waits.
var ErrIncomplete = errors.New("waiting for the gang's pods")

// Collect builds the gang key from its live pods (any phase but terminal, not being deleted).
// minCount is the PodGroup's gang minimum (0 for a label gang: MinCountAnnotation). A gang that
// can never run (no PS, two PSes, a worker without GPUs, an unknown model) is an error that says
// why; one still missing pods wraps ErrIncomplete.
func Collect(key Key, pods []*v1.Pod, minCount int) (*Gang, error) {
	g := &Gang{Key: key, MinCount: minCount}
	for _, p := range pods {
		if k, ok := KeyOf(p); !ok || k != key || terminal(p) || p.DeletionTimestamp != nil {
			continue
		}
		if key.ByLabel && g.MinCount == 0 {
			if s := p.Annotations[MinCountAnnotation]; s != "" {
				n, err := strconv.Atoi(s)
				if err != nil || n < 2 {
					return nil, fmt.Errorf("gang %s: pod %s: annotation %s=%q: want a count of at least 2 (a PS and a worker)", key, p.Name, MinCountAnnotation, s)
				}
				g.MinCount = n
			}
		}
		switch role := cmp.Or(p.Labels[RoleLabel], RoleWorker); role {
		case RolePS:
			if g.PS != nil {
				return nil, fmt.Errorf("gang %s: two PS pods (%s, %s); want one", key, g.PS.Name, p.Name)
			}
			g.PS = p
		case RoleWorker:
			if PodGPUs(p) < 1 {
				return nil, fmt.Errorf("gang %s: worker pod %s requests no %s", key, p.Name, GPUResource)
			}
			g.Workers = append(g.Workers, p)
		default:
			return nil, fmt.Errorf("gang %s: pod %s: label %s=%q: want %s or %s", key, p.Name, RoleLabel, role, RolePS, RoleWorker)
		}
	}
	slices.SortFunc(g.Workers, func(a, b *v1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	if g.MinCount == 0 {
		if key.ByLabel {
			return nil, fmt.Errorf("gang %s: no pod carries %s", key, MinCountAnnotation)
		}
		g.MinCount = 1 + len(g.Workers)
	}
	if have := len(g.Workers) + btoi(g.PS != nil); have < g.MinCount {
		return g, fmt.Errorf("%w: %d of %d", ErrIncomplete, have, g.MinCount)
	}
	if g.PS == nil {
		return nil, fmt.Errorf("gang %s: no pod labelled %s=%s: a job needs its parameter server", key, RoleLabel, RolePS)
	}
	if len(g.Workers) > 32 {
		return nil, fmt.Errorf("gang %s: %d workers: a job has at most 32 (the switch's worker bitmap)", key, len(g.Workers))
	}
	md, err := ModelOf(g.PS)
	if err != nil {
		return nil, err
	}
	g.Model = md
	return g, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GPUs is the gang's GPUs: its workers'.
func (g *Gang) GPUs() int {
	n := 0
	for _, w := range g.Workers {
		n += PodGPUs(w)
	}
	return n
}

// Pods are the gang's pods, PS first.
func (g *Gang) Pods() []*v1.Pod { return append([]*v1.Pod{g.PS}, g.Workers...) }

// Plan is NetPack's placement of a gang, pod by pod.
type Plan struct {
	ID  string
	Key Key
	// Node and Rank per pod (Rank for workers only); PSNode is the PS's node.
	Node      map[types.UID]string
	Rank      map[types.UID]int
	PSNode    string
	WorldSize int
	// Local is the worker on the PS's node, if any ("" otherwise).
	Local    types.UID
	INA      bool
	Priority uint8
	// Placement is NetPack's, on the view it was made on.
	Placement netpack.Placement
	// Why notes what the plan decided beyond NetPack (e.g. INA off for unlabelled nodes).
	Why []string
}

// ErrNoFit: NetPack cannot place the gang on the cluster as it is now.
var ErrNoFit = errors.New("NetPack cannot place the gang now")

// Place plans g on v with cfg's policy: the same code the scheduler service places with
// (scheduler.Plan), then each worker pod onto a machine of the placement. A worker runs on one
// node, so a placement that gives a node other than one worker pod's GPUs cannot be followed:
// that too is ErrNoFit, with the reason.
func (v *View) Place(cfg Config, g *Gang, id string) (*Plan, error) {
	cfg = cfg.WithDefaults()
	running := make([]netpack.Placement, 0, len(v.Running))
	for k, p := range v.Running {
		if k != g.Key {
			running = append(running, p)
		}
	}
	slices.SortFunc(running, func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	j := &netpack.Job{ID: g.Key.String(), GPUs: g.GPUs(), Model: g.Model, Iterations: 1}
	if j.GPUs > v.Cluster.TotalGPUs() {
		return nil, fmt.Errorf("%w: gang %s needs %d GPUs, the cluster has %d", ErrNoFit, g.Key, j.GPUs, v.Cluster.TotalGPUs())
	}
	p, ok, skipped, err := scheduler.Plan(v.Cluster, running, cfg.Policy, j)
	v.Skipped = append(v.Skipped, skipped...)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: gang %s needs %d GPUs in a placement %s allows; %d are free", ErrNoFit, g.Key, j.GPUs, cfg.Policy, v.free(running))
	}
	pl := &Plan{ID: id, Key: g.Key, Node: map[types.UID]string{}, Rank: map[types.UID]int{}, PSNode: v.Nodes[p.PS],
		WorldSize: len(g.Workers), INA: p.INA, Priority: p.Priority, Placement: p}
	pl.Node[g.PS.UID] = pl.PSNode
	free := slices.Clone(g.Workers)
	var local *v1.Pod
	rank := 0
	for _, w := range p.Workers { // ascending machines
		node := v.Nodes[w.Machine]
		i := slices.IndexFunc(free, func(pod *v1.Pod) bool { return PodGPUs(pod) == w.GPUs })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s places %d GPUs of gang %s on node %s, and no worker pod left requests %d (a worker runs on one node)",
				ErrNoFit, cfg.Policy, w.GPUs, g.Key, node, w.GPUs)
		}
		pod := free[i]
		free = slices.Delete(free, i, i+1)
		pl.Node[pod.UID] = node
		if w.Machine == p.PS {
			local = pod
			continue
		}
		pl.Rank[pod.UID] = rank
		rank++
	}
	if len(free) > 0 {
		return nil, fmt.Errorf("%w: %s's placement of gang %s leaves worker pod %s without a node", ErrNoFit, cfg.Policy, g.Key, free[0].Name)
	}
	if local != nil {
		pl.Local = local.UID
		pl.Rank[local.UID] = rank // last: it talks to the PS inside its node, as in the scheduler service
	}
	for _, n := range slices.Sorted(maps.Values(pl.Node)) {
		if v.Unlabelled[n] && !slices.ContainsFunc(pl.Why, func(w string) bool { return strings.Contains(w, " "+n+" ") }) {
			pl.INA = false
			pl.Why = append(pl.Why, fmt.Sprintf("INA off: node %s has no %s label, so no switch is known to aggregate there", n, RackLabel))
		}
	}
	return pl, nil
}

func (v *View) free(running []netpack.Placement) int {
	st := netpack.NewState(v.Cluster)
	for _, r := range running {
		_ = st.Add(r)
	}
	n := 0
	for m := range v.Cluster.Machines {
		n += st.FreeGPUs(netpack.MachineID(m))
	}
	return n
}

// Annotations are the plan annotations of pod (one of the plan's).
func (pl *Plan) Annotations(pod *v1.Pod) map[string]string {
	a := map[string]string{
		PlanAnnotation:      pl.ID,
		NodeAnnotation:      pl.Node[pod.UID],
		WorldSizeAnnotation: strconv.Itoa(pl.WorldSize),
		PSNodeAnnotation:    pl.PSNode,
		INAAnnotation:       strconv.FormatBool(pl.INA),
		PriorityAnnotation:  strconv.Itoa(int(pl.Priority)),
		LocalAnnotation:     strconv.FormatBool(pl.Local != "" && (pod.UID == pl.Local || pod.Labels[RoleLabel] == RolePS)),
	}
	if r, ok := pl.Rank[pod.UID]; ok {
		a[RankAnnotation] = strconv.Itoa(r)
	}
	return a
}

// String is the plan as the plugin logs it: node per rank, the PS, INA, priority.
func (pl *Plan) String() string {
	byRank := make([]string, pl.WorldSize)
	for uid, r := range pl.Rank {
		if r < len(byRank) {
			byRank[r] = pl.Node[uid]
		}
	}
	return fmt.Sprintf("workers %s, ps %s, ina %v, priority %d", strings.Join(byRank, ","), pl.PSNode, pl.INA, pl.Priority)
}
