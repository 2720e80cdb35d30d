package gang

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/inapack/inapack/netpack"
)

// planner is a netpack placer and State kept from gang to gang, as netpack means its placer to be
// kept (its tracker follows the State's change journal, so a call costs the changes, not the
// cluster): scheduler.Plan makes both anew for each gang, and at 10,000 nodes most of its time is
// re-reading every running job. It holds for one cluster, the Live's machines with one set of
// nodes refused (Exclude's caps, key): the next gang with the same refusals (at most nodes
// cordoned or tainted for every gang alike) is planned on it, any other on a new one.
type planner struct {
	key     string
	gen     uint64 // Live.gen it was made at
	cluster *netpack.Cluster
	policy  string
	st      *netpack.State // nil until the first gang; then every running gang in it
	placer  netpack.Placer
	// broken: a running gang did not fit the State (scheduler.Plan skips it, in ID order); such a
	// view is planned as scheduler.Plan does, anew.
	broken bool
}

// refusedKey names v's refused nodes with the GPUs Exclude left them.
func refusedKey(v *View) string {
	if len(v.Refused) == 0 {
		return ""
	}
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(v.Refused)) {
		fmt.Fprintf(&b, "%s=%d;", n, v.Cluster.Machines[v.Machine[n]].GPUs)
	}
	return b.String()
}

// usePlanner gives v the Live's planner for its cluster, made anew if its cluster differs
// (under mu).
func (l *Live) usePlanner(v *View) {
	key := refusedKey(v)
	if pl := l.planner; pl != nil && pl.key == key && pl.gen == l.gen && pl.policy == l.cfg.Policy && !pl.broken {
		v.Cluster = pl.cluster // the same machines as v's own copy: its key and generation say so
	} else {
		l.planner = &planner{key: key, gen: l.gen, cluster: v.Cluster, policy: l.cfg.Policy}
	}
	v.live = l
}

func (pl *planner) remove(id string) {
	if pl != nil && pl.st != nil {
		pl.st.Remove(id)
	}
}

func (pl *planner) add(p netpack.Placement) {
	if pl != nil && pl.st != nil && pl.st.Add(p) != nil {
		pl.broken = true
	}
}

// errNoPlanner: the view's cluster is not its Live's planner's (a later View replaced it).
var errNoPlanner = errors.New("no planner for this view")

// plan places j on v with the kept placer: what scheduler.Plan(v.Cluster, running, policy, j)
// returns, for a j that is not running.
func (l *Live) plan(v *View, policy string, j *netpack.Job) (netpack.Placement, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl := l.planner
	if pl == nil || pl.cluster != v.Cluster || pl.policy != policy || pl.broken {
		return netpack.Placement{}, false, errNoPlanner
	}
	if pl.st == nil {
		placer, err := netpack.NewPlacer(policy, netpack.Options{})
		if err != nil {
			return netpack.Placement{}, false, err
		}
		pl.placer, pl.st = placer, netpack.NewState(pl.cluster)
		for _, r := range l.sorted {
			if pl.st.Add(r) != nil {
				pl.broken = true
				return netpack.Placement{}, false, errNoPlanner
			}
		}
	}
	p, ok := netpack.PlaceOne(pl.placer, pl.st, j)
	if ok {
		p.Priority = netpack.PriorityBySize.Of(j)
	}
	return p, ok, nil
}
