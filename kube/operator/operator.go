package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/scheduler"
)

// Name is the operator's name: its controller's, its events' source, its leader-election lock's.
const Name = "inapack-operator"

// Config is one operator.
type Config struct {
	// Controller is the switch controller's job API (an *api.Client, with its token and CA).
	Controller scheduler.Controller
	// Topology is the ConfigMap holding topology.json under TopologyKey (default "topology.json"):
	// the switches, links and hosts, one host per node of the same name. It is read at every
	// install, so an edited topology applies to the next job.
	Topology    types.NamespacedName
	TopologyKey string
	// Window is the aggregator slots each job gets (default 16, at most the active slots).
	Window int
	// Iface is the nodes' interface towards their switch (default eth0).
	Iface string
	// MasterPortBase plus a gang's switch job id is its torchrun rendezvous port, MASTER_PORT
	// (default 29500, torch's own; gang.MasterPortAnnotation).
	MasterPortBase int
	// Namespace limits the operator to one namespace's pods ("" for all).
	Namespace string
	// LeaderElection makes replicas elect one leader in LeaderElectionNamespace (only the leader
	// allocates switch ids and slots).
	LeaderElection          bool
	LeaderElectionNamespace string
	// Owner is written on every job the operator adds (cp.JobConfig.Owner): the controller's jobs
	// of this owner that no live gang holds are removed, the others are never touched. Default
	// Name, or Name/Namespace for an operator limited to one namespace; operators that share a
	// switch controller need owners of their own.
	Owner string
	// SyncInterval is how often the running gangs are compared with the controller's job list
	// (default 30s): a running gang's job the controller lost is added again, a job of Owner no
	// live gang holds is removed.
	SyncInterval time.Duration
	// MaxRetryDelay caps the delay before a failed reconcile is retried (default 30s; the delay
	// doubles from 100ms per failure of the same gang).
	MaxRetryDelay time.Duration
	// MetricsBindAddress serves the operator's Prometheus metrics (and controller-runtime's) at
	// /metrics ("" or "0": off). An address other than loopback needs MetricsSecure.
	MetricsBindAddress string
	// MetricsSecure serves them over HTTPS (a self-signed certificate) to requests whose bearer
	// token the API server authenticates and authorizes for get on /metrics.
	MetricsSecure bool
	// LeaseDuration is the leader-election lease (default 15s; a standby takes over this long
	// after the leader stopped renewing it). RenewDeadline and RetryPeriod follow from it.
	LeaseDuration time.Duration
	// Logger (default klog's). The first operator started also gives it to controller-runtime's
	// global logger, which parts of controller-runtime log to whatever a manager is given.
	Logger *logr.Logger
}

func (c Config) withDefaults() Config {
	c.TopologyKey = cmp.Or(c.TopologyKey, "topology.json")
	c.Window = cmp.Or(c.Window, 16)
	c.Iface = cmp.Or(c.Iface, "eth0")
	c.MasterPortBase = cmp.Or(c.MasterPortBase, 29500)
	if c.Owner == "" {
		c.Owner = Name
		if c.Namespace != "" {
			c.Owner += "/" + c.Namespace
		}
	}
	c.SyncInterval = cmp.Or(c.SyncInterval, 30*time.Second)
	c.MaxRetryDelay = cmp.Or(c.MaxRetryDelay, 30*time.Second)
	if c.Logger == nil {
		l := klog.NewKlogr().WithName(Name)
		c.Logger = &l
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Controller == nil:
		return errors.New("operator: no switch controller")
	case c.Topology.Name == "" || c.Topology.Namespace == "":
		return errors.New("operator: no topology ConfigMap (namespace/name)")
	case c.Window < 1:
		return fmt.Errorf("operator: window %d: want at least 1", c.Window)
	case c.MasterPortBase < 1 || c.MasterPortBase+scheduler.MaxSwitchJob > 65535:
		return fmt.Errorf("operator: master port base %d: want 1..%d (a gang's port is the base plus its switch job id, up to %d)",
			c.MasterPortBase, 65535-scheduler.MaxSwitchJob, scheduler.MaxSwitchJob)
	case c.SyncInterval < 0 || c.MaxRetryDelay < 0:
		return fmt.Errorf("operator: sync interval %v, max retry delay %v: want positive", c.SyncInterval, c.MaxRetryDelay)
	}
	return nil
}

// planIndex indexes pods by the plans they belong to: their plan annotation and, where it
// differs, the plan their wiring was installed for.
const planIndex = "inapack.io/plans"

func plansOf(o client.Object) []string {
	a := o.GetAnnotations()
	var out []string
	if p := a[gang.PlanAnnotation]; p != "" {
		out = append(out, p)
	}
	if p := a[InstalledAnnotation]; p != "" && p != a[gang.PlanAnnotation] {
		out = append(out, p)
	}
	return out
}

var setGlobalLogger sync.Once

// retryLimiter is how long a failed request waits before it is tried again: 100ms doubling per
// failure of the same request up to max (controller-runtime's default goes on to about 17
// minutes, far longer than a switch controller takes to restart). One reconcile runs at a time,
// so retries cannot swamp the API server or the controller.
func retryLimiter(max time.Duration) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, max)
}

// Operator is a running operator.
type Operator struct {
	cancel context.CancelFunc
	done   chan error
	stop   sync.Once
	err    error
}

// Start starts an operator on the API server rc points at and returns once its pod cache is in
// sync. It runs until ctx ends or Stop.
func Start(ctx context.Context, rc *rest.Config, cfg Config) (*Operator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	setGlobalLogger.Do(func() { ctrllog.SetLogger(*cfg.Logger) })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	metrics, err := metricsServer(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Controller = counted{cfg.Controller}
	opts := ctrl.Options{Scheme: scheme, Logger: *cfg.Logger, Metrics: metrics,
		HealthProbeBindAddress: "0", LeaderElection: cfg.LeaderElection, LeaderElectionID: Name,
		LeaderElectionNamespace: cfg.LeaderElectionNamespace}
	if d := cfg.LeaseDuration; d > 0 {
		renew, retry := d*2/3, d/6
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &d, &renew, &retry
	}
	if cfg.Namespace != "" {
		opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}}}
	}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1.Pod{}, planIndex, plansOf); err != nil {
		return nil, fmt.Errorf("operator: indexing pods by plan: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	r := &reconciler{cfg: cfg, client: mgr.GetClient(), api: mgr.GetAPIReader(), events: mgr.GetEventRecorder(Name),
		allocs: map[string]allocation{}}
	r.obs = &observer{cs: cs, events: r.events}
	enqueue := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, p := range plansOf(o) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: p}})
		}
		return out
	})
	// The comparison with the controller's job list is a request of its own, queued once here and
	// then again every SyncInterval by itself.
	kick := make(chan event.TypedGenericEvent[*v1.Pod], 1)
	kick <- event.TypedGenericEvent[*v1.Pod]{Object: &v1.Pod{}}
	syncSource := source.Channel(kick, handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *v1.Pod) []reconcile.Request {
		return []reconcile.Request{syncRequest}
	}))
	// One reconcile at a time: switch ids and slots are allocated from what earlier ones took, and
	// the sync's view of which jobs are live is not raced by an install.
	err = ctrl.NewControllerManagedBy(mgr).Named(Name).Watches(&v1.Pod{}, enqueue).WatchesRawSource(syncSource).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: ptr.To(true),
			RateLimiter: retryLimiter(cfg.MaxRetryDelay)}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &Operator{cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(ctx) }()
	select {
	case ok := <-synced:
		if !ok {
			cancel()
			return nil, fmt.Errorf("operator: the pod cache did not sync: %w", <-o.done)
		}
	case err := <-o.done:
		cancel()
		return nil, fmt.Errorf("operator: %w", err)
	case <-time.After(2 * time.Minute):
		cancel()
		return nil, errors.New("operator: the pod cache did not sync within 2 minutes")
	}
	cfg.Logger.Info("operator started", "topology", cfg.Topology.String(), "window", cfg.Window, "namespace", cfg.Namespace,
		"owner", cfg.Owner, "syncInterval", cfg.SyncInterval, "maxRetryDelay", cfg.MaxRetryDelay)
	return o, nil
}

// Stop stops the operator and waits for it. Finalizers and annotations stay: the next operator
// carries on from them.
func (o *Operator) Stop() error {
	o.stop.Do(func() {
		o.cancel()
		o.err = <-o.done
	})
	return o.err
}

// Run runs an operator until ctx ends.
func Run(ctx context.Context, rc *rest.Config, cfg Config) error {
	o, err := Start(ctx, rc, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return o.Stop()
}
