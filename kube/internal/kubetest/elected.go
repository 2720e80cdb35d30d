package kubetest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// ElectedScheduler is one replica of kube-scheduler with leader election on, in the test's
// process.
type ElectedScheduler struct {
	Identity string // its identity in the Lease
	leading  chan struct{}
	stop     func()
}

// Leading is closed once the replica leads.
func (s *ElectedScheduler) Leading() <-chan struct{} { return s.leading }

// Stop ends the replica (a crash if its API server is cut off first: it cannot give up its
// Lease, which the next replica then waits out) and waits for it.
func (s *ElectedScheduler) Stop() { s.stop() }

// StartElectedScheduler runs kube-scheduler with config, whose leaderElection must be on, as a
// replica: kube-scheduler's own leader election (its Lease, identity, durations and
// release-on-cancel, as its options build them from config) decides when it schedules. Only
// the end differs: kube-scheduler exits the process when it stops leading, which would end the
// test, so here the replica just stops (as a restarted pod would come back as a standby). A
// replica starts its informers when it begins to lead (DelayCacheUntilActive's way).
func StartElectedScheduler(ctx context.Context, t testing.TB, config string, plugins ...app.Option) *ElectedScheduler {
	t.Helper()
	return StartElectedSchedulerServing(ctx, t, config, 0, "", plugins...)
}

// StartElectedSchedulerServing is StartElectedScheduler with kube-scheduler's secure port (its
// /metrics, /healthz; a self-signed certificate, requests' tokens authenticated and authorized by
// the API server that kubeconfig reaches, as in a pod by its in-cluster config) on
// 127.0.0.1:port while it leads (0: off).
func StartElectedSchedulerServing(ctx context.Context, t testing.TB, config string, port int, kubeconfig string, plugins ...app.Option) *ElectedScheduler {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = port
	if port != 0 {
		opts.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
		opts.SecureServing.ServerCert.CertDirectory = t.TempDir()
		opts.Authentication.RemoteKubeConfigFile, opts.Authorization.RemoteKubeConfigFile = kubeconfig, kubeconfig
	}
	ctx, cancel := context.WithCancel(ctx)
	cc, sched, err := app.Setup(ctx, opts, plugins...)
	if err != nil {
		cancel()
		t.Fatalf("kube-scheduler setup: %v", err)
	}
	if cc.LeaderElection == nil {
		cancel()
		t.Fatal("kube-scheduler config without leader election")
	}
	le := *cc.LeaderElection
	// app.Run schedules at once without an elector of its own; the elector below calls it.
	cc.LeaderElection, cc.ComponentConfig.LeaderElection.LeaderElect = nil, false
	s := &ElectedScheduler{Identity: le.Lock.Identity(), leading: make(chan struct{})}
	var mu sync.Mutex
	started, stopped, ran := false, false, make(chan struct{})
	le.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(ctx context.Context) {
			mu.Lock()
			if stopped {
				mu.Unlock()
				return
			}
			started = true
			mu.Unlock()
			defer close(ran)
			close(s.leading)
			configz.Delete("componentconfig") // a replica led before in this process; it registers it anew
			if err := app.Run(ctx, cc, sched); ctx.Err() == nil {
				t.Errorf("kube-scheduler %s: %v", s.Identity, err)
			}
		},
		OnStoppedLeading: func() {},
	}
	elector, err := leaderelection.NewLeaderElector(le)
	if err != nil {
		cancel()
		t.Fatalf("kube-scheduler leader election: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(ctx)
	}()
	s.stop = func() {
		mu.Lock()
		again, led := stopped, started
		stopped = true
		mu.Unlock()
		if again {
			return
		}
		cancel()
		for what, ch := range map[string]chan struct{}{"elector": done, "scheduler": ran} {
			if what == "scheduler" && !led {
				continue
			}
			select {
			case <-ch:
			case <-time.After(15 * time.Second):
				t.Errorf("kube-scheduler %s: its %s did not stop within 15s", s.Identity, what)
			}
		}
	}
	t.Cleanup(s.stop)
	return s
}
