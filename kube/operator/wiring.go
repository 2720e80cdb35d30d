package operator

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/scheduler"
)

// InstalledAnnotation is the operator's own record on a pod: the plan whose switch job the pod's
// wiring annotations describe. It is written, with the finalizer and the wiring, before the job
// is added to the switch controller, so a job on a switch always has pods that name it; a pod
// whose plan annotation has moved on to another plan tells the operator the old job is to go.
const InstalledAnnotation = "inapack.io/installed-plan"

// wiringKeys are the annotations the operator writes (besides Ready): removed from a pod whose
// plan was given up before it ran, so the next plan starts clean.
var wiringKeys = []string{InstalledAnnotation, gang.SwitchJobAnnotation, gang.SlotBaseAnnotation, gang.WindowAnnotation,
	gang.PriorityCapAnnotation, gang.IPAnnotation, gang.IfaceAnnotation, gang.PSIPAnnotation, gang.PSMACAnnotation,
	gang.LocalIfaceAnnotation, gang.MasterAddrAnnotation, gang.MasterPortAnnotation, gang.ReadyAnnotation}

// plan is one plan's pods as the plan annotations describe them.
type plan struct {
	id        string
	ps        *v1.Pod
	workers   []*v1.Pod // by rank
	members   []int     // by rank: the worker's member index behind its node's switch port
	local     *v1.Pod   // the worker on the PS's node, if any
	ina       bool
	priority  uint8
	worldSize int
	// masterService is the headless Service the pods name for torchrun's rendezvous ("": none).
	masterService string
}

// errIncomplete: not every pod of the plan carries it yet.
type errIncomplete struct{ have, want int }

func (e errIncomplete) Error() string {
	return fmt.Sprintf("%d of the plan's %d pods carry it", e.have, e.want)
}

// readPlan checks that pods are one whole plan: a PS and world-size workers with ranks 0..n-1,
// each on a node, and agreeing on the plan's settings. Too few pods is errIncomplete; anything
// else wrong is an error that says what.
func readPlan(id string, pods []*v1.Pod) (*plan, error) {
	pl := &plan{id: id, worldSize: -1}
	byRank := map[int]*v1.Pod{}
	for _, p := range pods {
		a := p.Annotations
		ws, err := strconv.Atoi(a[gang.WorldSizeAnnotation])
		if err != nil || ws < 1 || ws > 32 {
			return nil, fmt.Errorf("pod %s: %s=%q: want 1..32", p.Name, gang.WorldSizeAnnotation, a[gang.WorldSizeAnnotation])
		}
		if pl.worldSize >= 0 && ws != pl.worldSize {
			return nil, fmt.Errorf("pod %s: world size %d, other pods of the plan say %d", p.Name, ws, pl.worldSize)
		}
		pl.worldSize = ws
		if a[gang.NodeAnnotation] == "" {
			return nil, fmt.Errorf("pod %s: no %s", p.Name, gang.NodeAnnotation)
		}
		prio, err := strconv.ParseUint(a[gang.PriorityAnnotation], 10, 8)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %s=%q: want 0..255", p.Name, gang.PriorityAnnotation, a[gang.PriorityAnnotation])
		}
		pl.priority, pl.ina = uint8(prio), a[gang.INAAnnotation] != "false"
		if p.Labels[gang.RoleLabel] == gang.RolePS {
			if pl.ps != nil {
				return nil, fmt.Errorf("two PS pods (%s, %s)", pl.ps.Name, p.Name)
			}
			pl.ps = p
			continue
		}
		r, err := strconv.Atoi(a[gang.RankAnnotation])
		if err != nil || r < 0 || r >= ws {
			return nil, fmt.Errorf("pod %s: %s=%q: want 0..%d", p.Name, gang.RankAnnotation, a[gang.RankAnnotation], ws-1)
		}
		if q := byRank[r]; q != nil {
			return nil, fmt.Errorf("pods %s and %s both have rank %d", q.Name, p.Name, r)
		}
		byRank[r] = p
	}
	if have := len(byRank) + btoi(pl.ps != nil); pl.worldSize < 0 || have < pl.worldSize+1 || pl.ps == nil {
		return nil, errIncomplete{have, max(pl.worldSize, 1) + 1}
	}
	var err error
	if pl.masterService, err = masterService(pods); err != nil {
		return nil, err
	}
	for r := range pl.worldSize {
		w := byRank[r]
		pl.workers = append(pl.workers, w)
		m, err := member(w)
		if err != nil {
			return nil, err
		}
		pl.members = append(pl.members, m)
		if w.Annotations[gang.LocalAnnotation] == "true" {
			if w.Annotations[gang.NodeAnnotation] != pl.ps.Annotations[gang.NodeAnnotation] {
				return nil, fmt.Errorf("pod %s is marked local but is not on the PS's node", w.Name)
			}
			if r != pl.worldSize-1 {
				// Its bit is left out of the switches' members: only the last rank can be.
				return nil, fmt.Errorf("local worker %s has rank %d; the worker on the PS's node must be last", w.Name, r)
			}
			pl.local = w
		}
	}
	// Workers sharing a node share its switch port: the switch tells them apart by member only.
	seen := map[[2]string]*v1.Pod{}
	for r, w := range pl.remote() {
		k := [2]string{node(w), strconv.Itoa(pl.members[r])}
		if q := seen[k]; q != nil {
			return nil, fmt.Errorf("pods %s and %s are both member %d on node %s (%s must number a node's workers 0..k-1)",
				q.Name, w.Name, pl.members[r], k[0], gang.MemberAnnotation)
		}
		seen[k] = w
	}
	return pl, nil
}

// member is a worker's member index (gang.MemberAnnotation; absent: 0).
func member(w *v1.Pod) (int, error) {
	s, ok := w.Annotations[gang.MemberAnnotation]
	if !ok {
		return 0, nil
	}
	m, err := strconv.Atoi(s)
	if err != nil || m < 0 || m >= wire.MaxMembers {
		return 0, fmt.Errorf("pod %s: %s=%q: want 0..%d", w.Name, gang.MemberAnnotation, s, wire.MaxMembers-1)
	}
	return m, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func node(p *v1.Pod) string { return p.Annotations[gang.NodeAnnotation] }

// remote are the workers that reach the PS through the switches, in rank order.
func (pl *plan) remote() []*v1.Pod {
	if pl.local != nil {
		return pl.workers[:len(pl.workers)-1]
	}
	return pl.workers
}

// usesSwitch: a job whose only worker is on the PS's node never crosses a switch and has no
// entries (its switch id only keeps its local link's name unique on the node).
func (pl *plan) usesSwitch() bool { return len(pl.remote()) > 0 }

// switches are the ToRs of the remote workers' nodes: where the job holds slots.
func (pl *plan) switches(t *topology.Topology) ([]string, error) {
	var out []string
	for _, w := range pl.remote() {
		sw, err := torOf(t, node(w))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, sw) {
			out = append(out, sw)
		}
	}
	slices.Sort(out)
	return out, nil
}

// torOf is the switch a host is cabled to.
func torOf(t *topology.Topology, host string) (string, error) {
	if _, ok := t.Hosts[host]; !ok {
		return "", fmt.Errorf("node %s is not a host of the topology", host)
	}
	for _, l := range t.Links {
		for _, e := range [][2]string{{l.A, l.B}, {l.B, l.A}} {
			if e[0] == host {
				sw, _, err := t.ParseEndpoint(e[1])
				if err != nil {
					return "", err
				}
				if _, ok := t.Switches[sw]; ok {
					return sw, nil
				}
			}
		}
	}
	return "", fmt.Errorf("node %s is linked to no switch in the topology", host)
}

// allocation is what the operator gives a plan: its switch job id and slots.
type allocation struct {
	SwitchJob, SlotBase, Window int
	Switches                    []string
}

// priorityCap is the priority written to the switches: class 0's band (Kubernetes has no
// priority classes of INAPack's yet), the scheduler service's rule.
func (pl *plan) priorityCap() int { return scheduler.PriorityCap(0, pl.priority) }

// jobConfig is the plan's entries for the switch controller, derived from the topology as the
// scheduler service derives its jobs' (workers in rank order, so a worker's bit is its rank; the
// worker on the PS's node is no member), each worker's switch entry keyed by its pod's member.
func (pl *plan) jobConfig(t *topology.Topology, a allocation) (cp.JobConfig, error) {
	prio, ina := pl.priorityCap(), pl.ina
	tj := topology.Job{ID: a.SwitchJob, PS: node(pl.ps), PriorityCap: &prio, INA: &ina}
	for _, w := range pl.remote() {
		tj.Workers = append(tj.Workers, node(w))
	}
	jc, err := t.DeriveJob(tj)
	if err != nil {
		return cp.JobConfig{}, err
	}
	for i := range jc.Switches {
		for k := range jc.Switches[i].Members {
			m := &jc.Switches[i].Members[k]
			m.Member = pl.members[m.WorkerBit] // the worker bit is the rank
		}
	}
	return *jc, nil
}

// hostAddr is a topology host's IPv4 address (no prefix length) and MAC.
func hostAddr(t *topology.Topology, host string) (ip, mac string, err error) {
	h, ok := t.Hosts[host]
	if !ok {
		return "", "", fmt.Errorf("node %s is not a host of the topology", host)
	}
	p, err := netip.ParsePrefix(h.IP)
	if err != nil {
		return "", "", fmt.Errorf("host %s: ip %q: %w", host, h.IP, err)
	}
	return p.Addr().String(), h.MAC, nil
}

// wiring is the wiring annotations of each pod of the plan (Ready aside), by pod name. iface is
// the nodes' interface towards their switch, rv torchrun's rendezvous.
func (pl *plan) wiring(t *topology.Topology, a allocation, iface string, rv rendezvous) (map[string]map[string]string, error) {
	psIP, psMAC, err := hostAddr(t, node(pl.ps))
	if err != nil {
		return nil, err
	}
	lp, lw := scheduler.LocalLink(a.SwitchJob)
	common := map[string]string{
		InstalledAnnotation:        pl.id,
		gang.SwitchJobAnnotation:   strconv.Itoa(a.SwitchJob),
		gang.SlotBaseAnnotation:    strconv.Itoa(a.SlotBase),
		gang.WindowAnnotation:      strconv.Itoa(a.Window),
		gang.PriorityCapAnnotation: strconv.Itoa(pl.priorityCap()),
		gang.PSIPAnnotation:        psIP,
		gang.PSMACAnnotation:       psMAC,
	}
	rv.annotate(common)
	out := map[string]map[string]string{}
	for _, p := range append([]*v1.Pod{pl.ps}, pl.workers...) {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		ip, _, err := hostAddr(t, node(p))
		if err != nil {
			return nil, err
		}
		m[gang.IPAnnotation] = ip
		switch {
		case p == pl.ps:
			// The PS serves on every interface a worker reaches it by (ina-ps -iface takes the list).
			var ifs []string
			if pl.usesSwitch() {
				ifs = append(ifs, iface)
			}
			if pl.local != nil {
				ifs = append(ifs, lp)
				m[gang.LocalIfaceAnnotation] = lp
			}
			m[gang.IfaceAnnotation] = strings.Join(ifs, ",")
		case p == pl.local:
			m[gang.IfaceAnnotation], m[gang.LocalIfaceAnnotation] = lw, lw
		default:
			m[gang.IfaceAnnotation] = iface
		}
		out[p.Name] = m
	}
	return out, nil
}

// recorded is the allocation a pod's wiring annotations record (ok false if it has none).
func recorded(p *v1.Pod) (allocation, bool) {
	a := p.Annotations
	id, err1 := strconv.Atoi(a[gang.SwitchJobAnnotation])
	base, err2 := strconv.Atoi(a[gang.SlotBaseAnnotation])
	win, err3 := strconv.Atoi(a[gang.WindowAnnotation])
	if a[InstalledAnnotation] == "" || err1 != nil || err2 != nil || err3 != nil || id < 1 || id > scheduler.MaxSwitchJob {
		return allocation{}, false
	}
	return allocation{SwitchJob: id, SlotBase: base, Window: win}, true
}

// window is the slots a job gets: the configured window, at most the switches' active slots.
func window(cfg Config, t *topology.Topology) (win, active int) {
	active = scheduler.ActiveSlots(t)
	return min(cmp.Or(cfg.Window, 16), active), active
}
