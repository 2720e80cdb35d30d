package controlplane

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch"
	"github.com/inapack/inapack/refswitch/refswitchtest"
	"google.golang.org/grpc"
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
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	cfg := testConfig(t, refConfig, ref.Addr)
	cfg.Controller.MaxBackoff = Duration(200 * time.Millisecond)
	c := newController(t, cfg)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()

	waitFor(t, "first install", func() bool { return installed(ref.Switch) })
	// The poll interval is an hour: a snapshot now is the one read as the session began.
	waitFor(t, "counters read on connecting", func() bool { return c.Status()[0].Snapshot != nil })
	ref.Stop()
	waitFor(t, "controller to notice", func() bool { return !c.Status()[0].Connected })

	reconnected := time.Now()
	again := refswitchtest.Serve(t, ref.Addr)
	if installed(again.Switch) {
		t.Fatal("new switch is not empty")
	}
	waitFor(t, "reinstall on the restarted switch", func() bool { return installed(again.Switch) })
	checkJob5(t, again.Switch)
	waitFor(t, "counters read on reconnecting", func() bool { return c.Status()[0].Snapshot.Time.After(reconnected) })
	st := c.Status()[0]
	if st.Connects < 2 || st.PipelinePushes < 2 {
		t.Fatalf("status after restart: %+v", st)
	}
}

// TestRemovalWhileUnreachable removes a job while its switch is cut off; when the same switch
// (state intact) is reachable again, reconciliation deletes the job's entries and then frees the
// slots it still holds, without a pipeline push.
func TestRemovalWhileUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	sw := model.New()
	p4rt := refswitch.NewP4RuntimeServer(sw, refswitch.WithDeviceID(1), refswitch.WithLogger(quietLog()))
	serve := func(lis net.Listener) *grpc.Server {
		g := grpc.NewServer()
		p4rt.Register(g)
		go g.Serve(lis)
		t.Cleanup(g.Stop)
		return g
	}
	g1 := serve(lis)
	cfg := testConfig(t, refConfig, addr)
	// Long enough for a loaded machine to connect to a live switch; the removal while the switch is
	// down waits this long before it fails.
	cfg.Controller.DialTimeout = Duration(2 * time.Second)
	c := newController(t, cfg)
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sw.SetSlot(9, model.Slot{Job: 5, Seq: 3, Count: 1, Bitmap: 1})
	g1.Stop()
	waitFor(t, "the controller to see the switch gone", func() bool { return !c.Status()[0].Connected })
	if err := c.RemoveJob(ctx(t), 5); err == nil {
		t.Fatal("removal on an unreachable switch reported success")
	}
	if s := sw.Slot(9); s.Count != 1 {
		t.Fatalf("slot changed while unreachable: %+v", s)
	}
	var lis2 net.Listener
	waitFor(t, "the address to be free", func() bool { lis2, err = net.Listen("tcp", addr); return err == nil })
	serve(lis2)
	if _, err := c.Reconcile(ctx(t), "s1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := sw.PS(5); ok {
		t.Fatal("job 5 entries not deleted on reconnect")
	}
	if s := sw.Slot(9); s.Count != 0 || s.Job != 0 {
		t.Fatalf("slot 9 of removed job 5 not cleared on reconnect: %+v", s)
	}
	if st := c.Status()[0]; st.PipelinePushes != 1 {
		t.Fatalf("pipeline pushed %d times; the switch kept it", st.PipelinePushes)
	}
}

// TestStateFileKeepsAPIJobs restarts the controller: jobs added and removed through the API must
// survive, where the config's jobs list alone would undo them.
func TestStateFileKeepsAPIJobs(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	state := filepath.Join(t.TempDir(), "jobs.json")
	mk := func() *Controller {
		cfg := testConfig(t, refConfig, ref.Addr)
		cfg.Controller.StateFile = state
		return newController(t, cfg)
	}
	c1 := mk()
	if err := c1.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c1.AddJob(ctx(t), job6()); err != nil {
		t.Fatal(err)
	}
	if err := c1.RemoveJob(ctx(t), 5); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	c2 := mk()
	if d, err := c2.Reconcile(ctx(t), "s1"); err != nil || len(d.Insert)+len(d.Delete) != 0 {
		t.Fatalf("restarted controller changed jobs: %v %v", d, err)
	}
	if jobs := c2.Jobs(); len(jobs) != 1 || jobs[0].ID != 6 {
		t.Fatalf("jobs after restart: %+v", jobs)
	}
	os.WriteFile(state, []byte("[{\"id\": 6, \"switches\": [{\"switch\": \"nope\"}]}]"), 0o644)
	cfg := testConfig(t, refConfig, ref.Addr)
	cfg.Controller.StateFile = state
	if _, err := New(cfg, Options{DefaultP4Info: p4src.P4Info, Logger: quietLog()}); err == nil || !strings.Contains(err.Error(), "state file") {
		t.Fatalf("bad state file: %v", err)
	}
}
