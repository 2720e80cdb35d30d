package extender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/scheduler"
)

// Source lists what the extender needs beyond a request: every node (NetPack places on the whole
// cluster, not only the candidates kube-scheduler passes) and the pods of INA jobs (the jobs
// already running, whose traffic NetPack accounts for).
type Source interface {
	Nodes(ctx context.Context) ([]v1.Node, error)
	// Pods lists pods carrying the job label.
	Pods(ctx context.Context, jobLabel string) ([]v1.Pod, error)
}

// Extender answers kube-scheduler's filter and prioritize calls.
type Extender struct {
	cfg Config
	src Source
	log *slog.Logger
}

// New returns an extender over src.
func New(cfg Config, src Source, log *slog.Logger) *Extender {
	if log == nil {
		log = slog.Default()
	}
	return &Extender{cfg: cfg.withDefaults(), src: src, log: log}
}

// plan is NetPack's placement of a pod's job: GPUs per node.
type plan struct {
	job   string
	nodes map[string]int // node -> GPUs NetPack gives the job there
	ps    string
}

func (p *plan) String() string {
	var s []string
	for _, n := range slices.Sorted(maps.Keys(p.nodes)) {
		s = append(s, fmt.Sprintf("%s:%d", n, p.nodes[n]))
	}
	return strings.Join(s, ",") + " (ps " + p.ps + ")"
}

// planFor is NetPack's placement of pod's job, less the GPUs its pods already hold: the whole job
// (its GPUs from the annotation, else this pod's plus those of its bound pods) placed on the
// cluster without any of its own pods, as when its first pod came (so the plan stays the same
// from pod to pod while nothing else changes), then each bound pod's GPUs taken off its node.
// nil, nil for a pod of no INA job, or a job NetPack cannot place now or whose plan is used up.
func (e *Extender) planFor(ctx context.Context, pod *v1.Pod) (*plan, error) {
	key := e.cfg.jobKey(pod)
	if key == "" {
		return nil, nil
	}
	nodes, err := e.src.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := e.src.Pods(ctx, e.cfg.JobLabel)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	m, err := e.cfg.buildModel(nodes)
	if err != nil {
		return nil, err
	}
	run, err := e.cfg.running(m, pods, pod)
	if err != nil {
		return nil, err
	}
	md, err := jobModel(pod)
	if err != nil {
		return nil, badRequest{err}
	}
	mine, bound := run[key]
	delete(run, key)
	total := max(e.cfg.podGPUs(pod), 1)
	if bound {
		total += mine.Job.GPUs
	}
	if s, ok := pod.Annotations[JobGPUsAnnotation]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, badRequest{fmt.Errorf("pod %s/%s: annotation %s=%q: want a positive GPU count", pod.Namespace, pod.Name, JobGPUsAnnotation, s)}
		}
		total = n
	}
	var list []netpack.Placement
	for _, p := range run {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b netpack.Placement) int { return strings.Compare(a.Job.ID, b.Job.ID) })
	j := &netpack.Job{ID: key, GPUs: total, Model: md, Iterations: 1}
	p, ok, skipped, err := scheduler.Plan(m.c, list, e.cfg.Policy, j)
	for _, s := range skipped {
		e.log.Warn("extender: a running job does not fit the nodes' GPUs; left out", "err", s)
	}
	if err != nil || !ok {
		return nil, err
	}
	pl := &plan{job: key, nodes: map[string]int{}, ps: m.nodes[p.PS]}
	for _, w := range p.Workers {
		pl.nodes[m.nodes[w.Machine]] += w.GPUs
	}
	if bound {
		for _, w := range mine.Workers {
			n := m.nodes[w.Machine]
			if pl.nodes[n] -= w.GPUs; pl.nodes[n] <= 0 {
				delete(pl.nodes, n)
			}
		}
	}
	if len(pl.nodes) == 0 {
		return nil, nil
	}
	return pl, nil
}

// badRequest is an error in the request itself (its pod), not in the extender or its sources:
// the HTTP answer is 400, not 500.
type badRequest struct{ error }

// candidates are the node names of a request, whichever form kube-scheduler used.
func candidates(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	var out []string
	if args.Nodes != nil {
		for _, n := range args.Nodes.Items {
			out = append(out, n.Name)
		}
	}
	return out
}

// Filter keeps the candidate nodes NetPack places the pod's job on; every other node fails with
// the plan in its message. A pod of no INA job, or a job NetPack cannot place now, keeps every
// candidate (kube-scheduler's own checks decide).
func (e *Extender) Filter(ctx context.Context, args *extenderv1.ExtenderArgs) *extenderv1.ExtenderFilterResult {
	res := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
	if args.Pod == nil {
		res.Error = "no pod in the request"
		return res
	}
	pl, err := e.planFor(ctx, args.Pod)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	keep := func(name string) bool { return pl == nil || pl.nodes[name] > 0 }
	if args.NodeNames != nil {
		names := []string{}
		for _, n := range *args.NodeNames {
			if keep(n) {
				names = append(names, n)
			} else {
				res.FailedNodes[n] = "NetPack places job " + pl.job + " on " + pl.String()
			}
		}
		res.NodeNames = &names
	}
	if args.Nodes != nil {
		res.Nodes = &v1.NodeList{}
		for _, n := range args.Nodes.Items {
			if keep(n.Name) {
				res.Nodes.Items = append(res.Nodes.Items, n)
			} else {
				res.FailedNodes[n.Name] = "NetPack places job " + pl.job + " on " + pl.String()
			}
		}
	}
	if pl != nil {
		e.log.Info("extender filter", "pod", args.Pod.Namespace+"/"+args.Pod.Name, "job", pl.job, "plan", pl.String(),
			"failed", len(res.FailedNodes))
	}
	return res
}

// Prioritize scores each candidate 0..MaxExtenderPriority: the share of the pod's GPUs NetPack
// places on that node (10 where the plan holds all of them, 0 off the plan).
func (e *Extender) Prioritize(ctx context.Context, args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, error) {
	if args.Pod == nil {
		return nil, badRequest{errors.New("no pod in the request")}
	}
	pl, err := e.planFor(ctx, args.Pod)
	if err != nil {
		return nil, err
	}
	want := max(e.cfg.podGPUs(args.Pod), 1)
	out := extenderv1.HostPriorityList{}
	for _, n := range candidates(args) {
		var score int64
		if pl != nil {
			score = extenderv1.MaxExtenderPriority * int64(min(pl.nodes[n], want)) / int64(want)
		}
		out = append(out, extenderv1.HostPriority{Host: n, Score: score})
	}
	return out, nil
}
