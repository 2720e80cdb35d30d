package noderunner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/scheduler"
)

// Config is one node runner.
type Config struct {
	// Nodes are the nodes it runs pods for, each with the way into its host's network namespace
	// (emu's hosts file, scheduler.LoadHosts). The zero HostAccess is this machine's own namespace.
	Nodes map[string]scheduler.HostAccess
	// Bin is where a command's binary is found first (as if the image held it).
	Bin string
	// LogDir receives each pod's output, LogDir/NAMESPACE_NAME.log.
	LogDir string
	// MaxGrace caps a deleted pod's termination grace period (default 10s).
	MaxGrace time.Duration
	Logger   *slog.Logger
}

// Runner is a running node runner.
type Runner struct {
	cfg    Config
	cs     kubernetes.Interface
	pods   corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	procs map[types.NamespacedName]*proc
	links map[string]bool // node/link: local links made and not yet removed
}

// proc is a pod's container process.
type proc struct {
	uid     types.UID
	node    string
	cmd     *exec.Cmd
	started metav1.Time
	done    chan struct{} // closed when it ended
	code    int
	how     string // how it ended
	killed  bool   // by the runner, for a deleted pod
	link    string // the local link's PS end, removed when the PS ends
	log     string
}

// Start starts a runner for cfg.Nodes, returns once its pod informer is in sync.
func Start(ctx context.Context, cs kubernetes.Interface, cfg Config) (*Runner, error) {
	if len(cfg.Nodes) == 0 || cfg.LogDir == "" {
		return nil, errors.New("noderunner: Nodes and LogDir are required")
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, err
	}
	cfg.MaxGrace = cmp.Or(cfg.MaxGrace, 10*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Pods()
	r := &Runner{cfg: cfg, cs: cs, pods: inf.Lister(), log: cfg.Logger, cancel: cancel,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		procs: map[types.NamespacedName]*proc{}, links: map[string]bool{}}
	enqueue := func(o any) {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		if p, ok := o.(*v1.Pod); ok {
			r.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}); err != nil {
		cancel()
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		cancel()
		f.Shutdown()
		return nil, errors.New("noderunner: the pod informer did not sync")
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer f.Shutdown()
		for r.next(ctx) {
		}
	}()
	return r, nil
}

// Stop stops the runner: its pods' processes are killed (as a node that went away) and their
// local links removed. The pods' status is left as it was.
func (r *Runner) Stop() {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	ps := make([]*proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
	for _, p := range ps {
		r.kill(p, time.Second)
		r.unlink(p)
	}
}

// LogPath is where a pod's output goes.
func (r *Runner) LogPath(namespace, name string) string {
	return filepath.Join(r.cfg.LogDir, namespace+"_"+name+".log")
}

func (r *Runner) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("noderunner: pod sync failed, retrying", "pod", key.String(), "err", err)
			r.queue.AddRateLimited(key)
		}
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync brings one pod's process in line with the pod.
func (r *Runner) sync(ctx context.Context, key types.NamespacedName) error {
	pod, err := r.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return err
	}
	r.mu.Lock()
	p := r.procs[key]
	r.mu.Unlock()
	if p != nil && (pod == nil || pod.UID != p.uid) {
		// Gone, or replaced by a pod of the same name: its process goes with it.
		r.kill(p, time.Second)
		r.unlink(p)
		r.forget(key, p)
		p = nil
	}
	if pod == nil {
		return nil
	}
	h, mine := r.cfg.Nodes[pod.Spec.NodeName]
	if !mine {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if p != nil {
			grace := r.cfg.MaxGrace
			if g := pod.DeletionGracePeriodSeconds; g != nil {
				grace = min(grace, time.Duration(*g)*time.Second)
			}
			r.kill(p, grace)
			r.unlink(p)
		}
		// The kubelet's last words: the pod has ended (a terminal phase, as the kubelet leaves a
		// deleted pod since Kubernetes 1.27: controllers that keep their finalizer on a pod until
		// it ends, as Kueue's does, let it go then), and its object may go once finalizers let it.
		if pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			if err := r.finish(ctx, pod, p, "the pod was deleted before its container started"); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		zero := int64(0)
		err := r.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
			Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		return nil
	}
	if p == nil {
		switch pod.Status.Phase {
		case v1.PodSucceeded, v1.PodFailed:
			return nil
		case v1.PodRunning:
			// Started by a runner before this one, which took its process with it.
			return r.finish(ctx, pod, nil, "the node runner restarted and the container's process was lost")
		}
		return r.start(ctx, pod, h)
	}
	select {
	case <-p.done:
		if pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed {
			return r.finish(ctx, pod, p, "")
		}
	default:
		if pod.Status.Phase != v1.PodRunning {
			return r.running(ctx, pod, p)
		}
	}
	return nil
}

func (r *Runner) forget(key types.NamespacedName, p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.procs[key] == p {
		delete(r.procs, key)
	}
}

// start runs the pod's container on its node; a pod that cannot run is Failed with the reason.
func (r *Runner) start(ctx context.Context, pod *v1.Pod, h scheduler.HostAccess) error {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	argv, env, err := r.command(pod)
	if err != nil {
		return r.finish(ctx, pod, nil, err.Error())
	}
	p := &proc{uid: pod.UID, node: pod.Spec.NodeName, done: make(chan struct{}), log: r.LogPath(pod.Namespace, pod.Name)}
	if pod.Annotations[gang.LocalAnnotation] == "true" {
		if p.link, err = r.localLink(pod, h); err != nil {
			return r.finish(ctx, pod, nil, err.Error())
		}
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	full := h.Wrap(argv...)
	fmt.Fprintf(f, "# pod %s/%s on %s: %q\n", pod.Namespace, pod.Name, pod.Spec.NodeName, argv)
	p.cmd = exec.Command(full[0], full[1:]...)
	// The image's environment: its binaries on PATH (the bin directory, then this machine's), the
	// pod's hostname. Nothing of the runner's own environment (its credentials) leaks in.
	path := os.Getenv("PATH")
	if r.cfg.Bin != "" {
		path = r.cfg.Bin + ":" + path
	}
	p.cmd.Env = environ([]string{"PATH=" + path, "HOSTNAME=" + pod.Name}, env)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// A session of its own: the whole container (the command and its children) is killed at once.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = p.cmd.Start()
	f.Close()
	if err != nil {
		r.unlink(p)
		return r.finish(ctx, pod, nil, fmt.Sprintf("starting %s: %v", argv[0], err))
	}
	p.started = metav1.Now()
	r.mu.Lock()
	r.procs[key] = p
	r.mu.Unlock()
	go func() {
		err := p.cmd.Wait()
		p.how = "exit status 0"
		if err != nil {
			p.how = err.Error()
		}
		p.code = p.cmd.ProcessState.ExitCode()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		close(p.done)
		r.unlinkIfPS(pod, p)
		r.queue.Add(key)
	}()
	r.log.Info("noderunner: pod started", "pod", key.String(), "node", pod.Spec.NodeName, "argv", argv)
	return r.running(ctx, pod, p)
}

// command is the pod's container's command line, its binary mapped to Bin, and environment.
func (r *Runner) command(pod *v1.Pod) ([]string, []v1.EnvVar, error) {
	switch {
	case len(pod.Spec.Containers) != 1:
		return nil, nil, fmt.Errorf("%d containers: the node runner runs pods of one container", len(pod.Spec.Containers))
	case len(pod.Spec.InitContainers) > 0:
		return nil, nil, errors.New("init containers are not supported by the node runner")
	}
	c := &pod.Spec.Containers[0]
	env, err := Env(pod, c, clientLookup{r.cs})
	if err != nil {
		return nil, nil, err
	}
	argv, err := Argv(c, env)
	if err != nil {
		return nil, nil, err
	}
	bin := filepath.Join(r.cfg.Bin, filepath.Base(argv[0]))
	if _, err := os.Stat(bin); r.cfg.Bin != "" && err == nil {
		argv[0] = bin
	} else if path, err := exec.LookPath(argv[0]); err == nil {
		argv[0] = path
	} else {
		return nil, nil, fmt.Errorf("command %s: neither in %s nor on PATH", argv[0], cmp.Or(r.cfg.Bin, "(no bin directory)"))
	}
	return argv, env, nil
}

// localLink makes the private link between the job's PS and the worker on this node, once for
// both pods (the first to start makes it); it returns the PS end's name.
func (r *Runner) localLink(pod *v1.Pod, h scheduler.HostAccess) (string, error) {
	id, err := strconv.Atoi(pod.Annotations[gang.SwitchJobAnnotation])
	if err != nil {
		return "", fmt.Errorf("pod is %s but has no %s: the operator did not wire it", gang.LocalAnnotation, gang.SwitchJobAnnotation)
	}
	lp, lw := scheduler.LocalLink(id)
	key := pod.Spec.NodeName + "/" + lp
	r.mu.Lock()
	made := r.links[key]
	r.mu.Unlock()
	if !made {
		if err := h.AddLocalLink(lp, lw); err != nil {
			return "", err
		}
		r.mu.Lock()
		r.links[key] = true
		r.mu.Unlock()
	}
	return lp, nil
}

// unlinkIfPS removes the local link once the PS that served on it ended.
func (r *Runner) unlinkIfPS(pod *v1.Pod, p *proc) {
	if pod.Labels[gang.RoleLabel] == gang.RolePS {
		r.unlink(p)
	}
}

func (r *Runner) unlink(p *proc) {
	if p.link == "" {
		return
	}
	key := p.node + "/" + p.link
	r.mu.Lock()
	made := r.links[key]
	delete(r.links, key)
	r.mu.Unlock()
	if made {
		if err := r.cfg.Nodes[p.node].DelLocalLink(p.link); err != nil {
			r.log.Warn("noderunner: removing a local link", "node", p.node, "link", p.link, "err", err)
		}
	}
}

// kill stops p's session: SIGTERM, SIGKILL after grace.
func (r *Runner) kill(p *proc, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	p.killed = true
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// tail is the last line of a log file, for a failed container's message.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4096 {
		_, _ = f.Seek(-4096, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := splitLines(string(b))
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}
