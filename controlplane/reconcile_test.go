package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
)

// waitFor polls cond until it holds; the deadline only bounds a broken run, it asserts no speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func installed(sw *model.Switch) bool {
	_, ok := sw.Job(model.JobKey{Job: 5, Port: 1})
	_, g := sw.McastGroups()[5]
	return ok && g && sw.Settings().ActiveSlots == 64
}

// TestRestoresRestartedSwitch stops the switch server and starts an empty one on the same
// address; the running controller must re-push the pipeline and reinstall the state by itself.
func TestRestoresRestartedSwitch(t *testing.T) {
	ref := startRef(t, "127.0.0.1:0")
	cfg := testConfig(t, refConfig, ref.addr)
	cfg.Controller.MaxBackoff = Duration(200 * time.Millisecond)
	c := newController(t, cfg)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	waitFor(t, "first install", func() bool { return installed(ref.sw) })
	ref.srv.Stop()
	waitFor(t, "controller to notice", func() bool { return !c.Status()[0].Connected })

	again := startRef(t, ref.addr)
	if installed(again.sw) {
		t.Fatal("new switch is not empty")
	}
	waitFor(t, "reinstall on the restarted switch", func() bool { return installed(again.sw) })
	checkJob5(t, again.sw)
	st := c.Status()[0]
	if st.Connects < 2 || st.PipelinePush < 2 {
		t.Fatalf("status after restart: %+v", st)
	}
}
