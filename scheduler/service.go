package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
)

// Controller is the part of the switch controller's job API the scheduler uses; *api.Client
// implements it.
type Controller interface {
	Jobs(ctx context.Context) ([]cp.JobConfig, error)
	AddJob(ctx context.Context, j cp.JobConfig) error
	RemoveJob(ctx context.Context, id int) error
}

var _ Controller = (*api.Client)(nil)

// Config is one scheduler service.
type Config struct {
	Cluster    *Cluster
	Hosts      map[string]HostAccess
	Controller Controller
	// Policy is a netpack policy name ("netpack" or a baseline, see Policies).
	Policy string
	// Bin is the directory holding ina-ps and ina-worker.
	Bin string
	// StateDir keeps state.json (jobs, placements, agent processes) and the agents' logs.
	StateDir string
	// Window is the aggregator slots given to each job (default 16, at most ActiveSlots).
	Window int
	// Threads is the agents' -threads, for each job the largest power of two up to it that divides
	// the job's window; 0 leaves each agent its own default, transport.AutoLanes of the cores it
	// may use on its host (one per four), which is what fits a host the scheduler knows no more of.
	Threads int
	// ProgressTimeout is the workers' -progress-timeout: a worker whose peer died fails this long
	// after (default 10s).
	ProgressTimeout time.Duration
	// Seed makes the workers' tensors deterministic, so each checks every result exactly.
	Seed uint64
	// Poll is how often running jobs' agents are checked (default 250ms).
	Poll   time.Duration
	Logger *slog.Logger
}

// Service queues, places, runs and follows jobs. Its methods are safe for concurrent use.
type Service struct {
	cfg   Config
	log   *slog.Logger
	procs *agentProcs

	mu     sync.Mutex
	jobs   []*Job
	byID   map[int]*Job
	nextID int
	// lastSwitchJob is the switch job id given last.
	lastSwitchJob int
	eng           *engine
	logs          map[int][]*agentLog // per running job, parallel to its Procs
	ctlIDs        map[int]bool        // switch job ids the controller had that are not ours
	// cancelling holds jobs cancelled while starting: launch ends them once started.
	cancelling map[int]bool

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New restores the service's state from StateDir (re-attaching to jobs that were running) and
// starts scheduling.
func New(cfg Config) (*Service, error) {
	if cfg.Cluster == nil || cfg.Controller == nil || cfg.StateDir == "" {
		return nil, errors.New("scheduler: Cluster, Controller and StateDir are required")
	}
	cfg.Policy = cmp.Or(cfg.Policy, "netpack")
	cfg.Window = min(cmp.Or(cfg.Window, 16), cfg.Cluster.ActiveSlots)
	cfg.ProgressTimeout = cmp.Or(cfg.ProgressTimeout, 10*time.Second)
	cfg.Poll = cmp.Or(cfg.Poll, 250*time.Millisecond)
	cfg.Seed = cmp.Or(cfg.Seed, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, h := range cfg.Cluster.Hosts {
		if _, ok := cfg.Hosts[h]; !ok {
			return nil, fmt.Errorf("scheduler: machine %s is not in the hosts file", h)
		}
	}
	eng, err := newEngine(cfg.Cluster.Model, cfg.Policy)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: cfg.Logger, procs: newProcs(), byID: map[int]*Job{}, nextID: 1, eng: eng,
		logs: map[int][]*agentLog{}, ctlIDs: map[int]bool{}, cancelling: map[int]bool{}, kick: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.restore(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	ctl, err := cfg.Controller.Jobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("scheduler: the switch controller: %w", err)
	}
	mine := map[int]bool{}
	for _, j := range s.jobs {
		if j.Placement != nil && !j.State.Final() {
			mine[j.Placement.SwitchJob] = true
		}
	}
	for _, j := range ctl {
		if !mine[j.ID] {
			s.ctlIDs[j.ID] = true
		}
	}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

// Close stops scheduling and following, and waits for starts and teardowns under way. Agents keep
// running: a new Service on the same StateDir re-attaches to them.
func (s *Service) Close() {
	s.cancel()
	s.wg.Wait()
}

// Policy is the placement policy in use.
func (s *Service) Policy() string { return s.cfg.Policy }

// Submit queues a job.
func (s *Service) Submit(sub Submission) (Job, error) {
	m, err := sub.Profile()
	if err != nil {
		return Job{}, err
	}
	switch {
	case sub.GPUs < 1 || sub.GPUs > s.cfg.Cluster.Model.TotalGPUs():
		return Job{}, fmt.Errorf("gpus %d: the cluster has %d", sub.GPUs, s.cfg.Cluster.Model.TotalGPUs())
	case sub.Iterations < 1 || sub.Iterations > 1e9:
		return Job{}, fmt.Errorf("iterations %d: want 1..1e9", sub.Iterations)
	case sub.PriorityClass < 0 || sub.PriorityClass > MaxPriorityClass:
		return Job{}, fmt.Errorf("priority_class %d: want 0..%d", sub.PriorityClass, MaxPriorityClass)
	case len(sub.Name) > 256:
		return Job{}, errors.New("name: longer than 256 bytes")
	}
	if sub.Pin != nil {
		if _, err := s.pinned(&Job{ID: 0, GPUs: sub.GPUs, Model: m, Iterations: sub.Iterations, Pin: sub.Pin}); err != nil {
			return Job{}, err
		}
	}
	s.mu.Lock()
	if sub.Name != "" {
		for _, o := range s.jobs {
			if o.Name == sub.Name && !o.State.Final() {
				s.mu.Unlock()
				return Job{}, fmt.Errorf("%w: job %d is %q and has not ended", ErrDuplicateName, o.ID, sub.Name)
			}
		}
	}
	j := &Job{ID: s.nextID, Name: sub.Name, GPUs: sub.GPUs, Model: m, Iterations: sub.Iterations,
		PriorityClass: sub.PriorityClass, Pin: sub.Pin, NoIntegrity: sub.Integrity != nil && !*sub.Integrity,
		State: Queued, Submitted: time.Now()}
	s.nextID++
	s.jobs = append(s.jobs, j)
	s.byID[j.ID] = j
	err = s.saveLocked()
	out := *j
	s.mu.Unlock()
	s.log.Info("job submitted", "job", j.ID, "name", j.Name, "gpus", j.GPUs, "model", m.Name, "iterations", j.Iterations)
	s.poke()
	return out, err
}

// Jobs returns every job, oldest first.
func (s *Service) Jobs() []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Job, len(s.jobs))
	for i, j := range s.jobs {
		out[i] = *j
	}
	return out
}

// ErrDuplicateName is returned for a submission named like a job that has not ended: names
// identify jobs to their users (traces, experiments), so two live ones may not share one.
var ErrDuplicateName = errors.New("duplicate job name")

// ErrUnknownJob is returned for a job id the service does not have.
var ErrUnknownJob = errors.New("unknown job")

// Job returns one job.
func (s *Service) Job(id int) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.byID[id]
	if !ok {
		return Job{}, fmt.Errorf("%w %d", ErrUnknownJob, id)
	}
	return *j, nil
}

// Cancel removes a queued job, or stops a running one and frees what it holds.
func (s *Service) Cancel(id int) error {
	s.mu.Lock()
	j, ok := s.byID[id]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("%w %d", ErrUnknownJob, id)
	}
	switch j.State {
	case Queued:
		s.endLocked(j, Cancelled, "cancelled by request", time.Now())
		s.mu.Unlock()
		return nil
	case Starting:
		// launch is installing entries and starting agents; it tears the job down when done.
		s.cancelling[j.ID] = true
		s.mu.Unlock()
		return nil
	case Running:
		s.mu.Unlock()
		s.teardown(j.ID, Cancelled, "cancelled by request")
		return nil
	}
	s.mu.Unlock()
	return fmt.Errorf("job %d is already %s", id, j.State)
}

// Machine is one machine of the cluster as GET /v1/cluster shows it.
type Machine struct {
	Host     string `json:"host"`
	Switch   string `json:"switch"`
	GPUs     int    `json:"gpus"`
	FreeGPUs int    `json:"free_gpus"`
}

// Machines lists the cluster's machines with their free GPUs.
func (s *Service) Machines() []Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cfg.Cluster
	out := make([]Machine, len(c.Hosts))
	for i, h := range c.Hosts {
		m := netpack.MachineID(i)
		out[i] = Machine{Host: h, Switch: c.ToR[i], GPUs: c.Model.Machines[i].GPUs, FreeGPUs: s.eng.freeGPUs(m)}
	}
	return out
}

func (s *Service) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop schedules whenever something changed, and follows running jobs.
func (s *Service) loop() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
			s.schedule()
		case <-tick.C:
			s.follow()
		}
	}
}

// schedule offers the queue to the policy and starts what it places.
func (s *Service) schedule() {
	s.mu.Lock()
	var waiting []*Job
	var started []*Job
	for _, j := range s.jobs {
		if j.State != Queued {
			continue
		}
		if j.Pin == nil {
			waiting = append(waiting, j)
			continue
		}
		// A pinned job starts as soon as its hosts have the GPUs, in submission order.
		if p, err := s.pinned(j); err == nil && s.fits(p) {
			if err := s.placeLocked(j, p); err != nil {
				s.endLocked(j, Failed, err.Error(), time.Now())
				continue
			}
			started = append(started, j)
		}
	}
	// Higher classes first; FIFO within a class (the sort is stable).
	slices.SortStableFunc(waiting, func(a, b *Job) int { return b.PriorityClass - a.PriorityClass })
	nj := make([]*netpack.Job, len(waiting))
	for i, j := range waiting {
		nj[i] = j.netpackJob()
	}
	if len(waiting) > 0 {
		for _, p := range s.eng.schedule(nj) {
			id, _ := strconv.Atoi(p.Job.ID)
			j := s.byID[id]
			if err := s.placeLocked(j, p); err != nil {
				s.endLocked(j, Failed, err.Error(), time.Now())
				continue
			}
			started = append(started, j)
		}
	}
	if len(started) > 0 {
		s.logSaveErr(s.saveLocked())
	}
	s.mu.Unlock()
	for _, j := range started {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.launch(j.ID) }()
	}
}

// placeLocked records p as j's placement: hosts and ranks, switch job id, slots.
func (s *Service) placeLocked(j *Job, p netpack.Placement) error {
	c := s.cfg.Cluster
	if err := s.eng.start(p); err != nil {
		return err
	}
	policy := s.cfg.Policy
	if j.Pin != nil {
		policy = "pinned"
	}
	pl := &Placement{Policy: policy, PS: c.Hosts[p.PS], INA: p.INA, PriorityCap: PriorityCap(j.PriorityClass, p.Priority),
		PolicyPriority: int(p.Priority), Window: s.cfg.Window}
	// Remote workers take ranks 0..n-2 in machine order; the worker on the PS's machine, if any,
	// is last: it talks to the PS inside the host and has no switch port.
	var local *PlacedWorker
	for _, w := range p.Workers {
		pw := PlacedWorker{Host: c.Hosts[w.Machine], GPUs: w.GPUs}
		if w.Machine == p.PS {
			pw.Local = true
			local = &pw
			continue
		}
		pw.Rank = len(pl.Workers)
		pl.Workers = append(pl.Workers, pw)
	}
	if local != nil {
		local.Rank = len(pl.Workers)
		pl.Workers = append(pl.Workers, *local)
	}
	if len(pl.Workers) > 32 {
		s.eng.finish(p.Job.ID)
		return fmt.Errorf("placed on %d machines: a job has at most 32 workers (the worker bitmap)", len(pl.Workers))
	}
	if local == nil || len(pl.Workers) > 1 {
		pl.SwitchJob = s.switchIDLocked()
		if pl.SwitchJob == 0 {
			s.eng.finish(p.Job.ID)
			return errors.New("no free switch job id (1..1023)")
		}
		for _, w := range pl.Workers {
			if !w.Local && !slices.Contains(pl.Switches, c.ToR[s.machineOf(w.Host)]) {
				pl.Switches = append(pl.Switches, c.ToR[s.machineOf(w.Host)])
			}
		}
		pl.SlotBase = s.slotBaseLocked(pl)
	}
	if r, ok := s.eng.estimate()[p.Job.ID]; ok {
		pl.PredictedMbps = r.FlowBps * 8 / 1e6
	}
	now := time.Now()
	j.Placement, j.State, j.Started = pl, Starting, &now
	j.QueueSec = now.Sub(j.Submitted).Seconds()
	s.log.Info("job placed", "job", j.ID, "policy", pl.Policy, "ps", pl.PS, "workers", hostsOf(pl), "ina", pl.INA,
		"priority_cap", pl.PriorityCap, "switch_job", pl.SwitchJob, "slots", fmt.Sprintf("%d+%d", pl.SlotBase, pl.Window))
	return nil
}

// pinned is a pinned job's placement, checked against the cluster.
func (s *Service) pinned(j *Job) (netpack.Placement, error) {
	c := s.cfg.Cluster
	pin := j.Pin
	nj := j.netpackJob()
	p := netpack.Placement{Job: nj, INA: pin.INA == nil || *pin.INA, Priority: netpack.PriorityBySize.Of(nj)}
	if pin.Priority != nil {
		if *pin.Priority < 0 || *pin.Priority > 255 {
			return p, fmt.Errorf("pin: priority %d: want 0..255", *pin.Priority)
		}
		p.Priority = uint8(*pin.Priority)
	}
	ps, ok := c.Machine(pin.PS)
	if !ok {
		return p, fmt.Errorf("pin: PS host %q is not a machine of the cluster", pin.PS)
	}
	p.PS = ps
	for _, w := range pin.Workers {
		m, ok := c.Machine(w.Host)
		if !ok {
			return p, fmt.Errorf("pin: worker host %q is not a machine of the cluster", w.Host)
		}
		if w.GPUs < 1 || w.GPUs > c.Model.Machines[m].GPUs {
			return p, fmt.Errorf("pin: %d GPUs on %s, which has %d", w.GPUs, w.Host, c.Model.Machines[m].GPUs)
		}
		p.Workers = append(p.Workers, netpack.Worker{Machine: m, GPUs: w.GPUs})
	}
	slices.SortFunc(p.Workers, func(a, b netpack.Worker) int { return int(a.Machine) - int(b.Machine) })
	if err := p.Validate(c.Model); err != nil {
		return p, fmt.Errorf("pin: %w", err)
	}
	return p, nil
}

// fits reports whether every machine of p has the GPUs free now.
func (s *Service) fits(p netpack.Placement) bool {
	for _, w := range p.Workers {
		if s.eng.freeGPUs(w.Machine) < w.GPUs {
			return false
		}
	}
	return true
}

func (s *Service) machineOf(host string) netpack.MachineID {
	m, _ := s.cfg.Cluster.Machine(host)
	return m
}

func hostsOf(p *Placement) []string {
	var out []string
	for _, w := range p.Workers {
		out = append(out, w.Host)
	}
	return out
}

// switchIDLocked is the next switch job id after the one given last that neither the controller
// nor a live job of ours uses (NextSwitchJob says why they go round; ina-cluster chaos saw it:
// TestSwitchJobIDsGoRound).
func (s *Service) switchIDLocked() int {
	used := map[int]bool{}
	for _, j := range s.jobs {
		if j.Placement != nil && !j.State.Final() {
			used[j.Placement.SwitchJob] = true
		}
	}
	id := NextSwitchJob(s.lastSwitchJob, func(id int) bool { return used[id] || s.ctlIDs[id] })
	if id != 0 {
		s.lastSwitchJob = id
	}
	return id
}

// slotBaseLocked picks the job's slot range by the SlotBase rule among the live jobs' ranges.
func (s *Service) slotBaseLocked(p *Placement) int {
	var live []SlotRange
	for _, j := range s.jobs {
		q := j.Placement
		if q == nil || j.State.Final() || q == p || q.SwitchJob == 0 {
			continue
		}
		live = append(live, SlotRange{Switches: q.Switches, Base: q.SlotBase, Window: q.Window})
	}
	return SlotBase(s.cfg.Cluster.ActiveSlots, p.Window, p.Switches, live)
}

// jobConfig is j's entries for the controller: derived from the topology like inactl derive, for
// the workers that reach the PS through the switches.
func (s *Service) jobConfig(j *Job) (cp.JobConfig, error) {
	p := j.Placement
	tj := topology.Job{ID: p.SwitchJob, PS: p.PS, PriorityCap: &p.PriorityCap, INA: &p.INA}
	for _, w := range p.Workers {
		if !w.Local {
			tj.Workers = append(tj.Workers, w.Host)
		}
	}
	jc, err := s.cfg.Cluster.Topo.DeriveJob(tj)
	if err != nil {
		return cp.JobConfig{}, err
	}
	return *jc, nil
}

func (s *Service) logSaveErr(err error) {
	if err != nil {
		s.log.Error("saving the scheduler state failed", "err", err)
	}
}
