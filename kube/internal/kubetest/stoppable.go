package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// StartStoppableScheduler is StartScheduler with a stop the test calls itself (a scheduler
// restart: stop, then start another with the same config); stop waits for the scheduler to end.
// The test's end stops it too.
func StartStoppableScheduler(ctx context.Context, t testing.TB, config string, plugins ...app.Option) (stop func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0
	ctx, cancel := context.WithCancel(ctx)
	cc, sched, err := app.Setup(ctx, opts, plugins...)
	if err != nil {
		cancel()
		t.Fatalf("kube-scheduler setup: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, cc, sched) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Log("kube-scheduler did not stop within 10s")
		}
		configz.Delete("componentconfig") // the next scheduler of this process registers it again
	}
	t.Cleanup(stop)
	select {
	case err := <-done:
		t.Fatalf("kube-scheduler exited at once: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	return stop
}
