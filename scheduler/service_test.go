package scheduler

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/netpack"
	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/refswitch/refswitchtest"
)

// recorder is the controller's real API client, noting what the scheduler asked of it.
type recorder struct {
	*api.Client
	mu      sync.Mutex
	added   []cp.JobConfig
	removed []int
}

func (r *recorder) AddJob(ctx context.Context, j cp.JobConfig) error {
	err := r.Client.AddJob(ctx, j)
	r.mu.Lock()
	r.added = append(r.added, j)
	r.mu.Unlock()
	return err
}

func (r *recorder) RemoveJob(ctx context.Context, id int) error {
	err := r.Client.RemoveJob(ctx, id)
	r.mu.Lock()
	r.removed = append(r.removed, id)
	r.mu.Unlock()
	return err
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// controllerFor serves a real controller for the topology's switches, each an in-process
// reference switch, and returns a recording client of its job API.
func controllerFor(t testing.TB, topo *topology.Topology) *recorder {
	t.Helper()
	eps := map[string]topology.Endpoint{}
	for name := range topo.Switches {
		eps[name] = topology.Endpoint{Address: refswitchtest.Serve(t, "127.0.0.1:0").Addr, Target: cp.TargetRef}
	}
	tp := *topo
	tp.INA.Jobs = nil
	cfg, err := tp.Derive(eps)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cp.New(cfg, cp.Options{DefaultP4Info: p4src.P4Info, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(c, "", quiet))
	t.Cleanup(srv.Close)
	return &recorder{Client: api.NewClient(srv.URL, "")}
}

// unreachableHosts names namespaces that do not exist: every agent fails to start, which is what
// the failure path needs (the agents themselves need root; see the netns test).
func unreachableHosts(c *Cluster) map[string]HostAccess {
	hs := map[string]HostAccess{}
	for _, h := range c.Hosts {
		hs[h] = HostAccess{Netns: "inapack-test-no-such-ns-" + h}
	}
	return hs
}

func newTestService(t testing.TB, dir string, ctl Controller, c *Cluster, hosts map[string]HostAccess) *Service {
	t.Helper()
	s, err := New(Config{Cluster: c, Hosts: hosts, Controller: ctl, Bin: t.TempDir(), StateDir: dir,
		Poll: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitFinal(t *testing.T, s *Service, n int) []Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs := s.Jobs()
		final := 0
		for _, j := range jobs {
			if j.State.Final() {
				final++
			}
		}
		if final >= n {
			return jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not end: %+v", jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sub(gpus int) Submission {
	compute := 0.01
	return Submission{GPUs: gpus, Model: ModelSpec{mustProfile("resnet50")}, Iterations: 10, BytesPerIteration: 4096,
		ComputeSec: &compute}
}

func TestFailedStartFreesEverything(t *testing.T) {
	topo := loadTopo(t, "two-racks")
	c, err := NewCluster(topo, ClusterParams{})
	if err != nil {
		t.Fatal(err)
	}
	ctl := controllerFor(t, topo)
	dir := t.TempDir()
	s := newTestService(t, dir, ctl, c, unreachableHosts(c))
	// 4 GPUs span two machines (a switch job), 1 GPU stays on one machine with its PS (no switch);
	// 10 GPUs take the whole cluster, so it can only start once the others have ended.
	for _, g := range []int{4, 1, 10} {
		if _, err := s.Submit(sub(g)); err != nil {
			t.Fatal(err)
		}
	}
	jobs := waitFinal(t, s, 3)
	for _, j := range jobs {
		if j.State != Failed || !strings.HasPrefix(j.Reason, "start:") || !strings.Contains(j.Reason, "inapack-test-no-such-ns") ||
			strings.Contains(j.Reason, "teardown") {
			t.Errorf("job %d: %s %q, want failed at start naming the host, and a clean teardown", j.ID, j.State, j.Reason)
		}
		if j.Placement == nil || j.Started == nil || j.Finished == nil {
			t.Errorf("job %d was not placed: %+v", j.ID, j)
		}
	}
	if p := jobs[0].Placement; p.SwitchJob == 0 || len(p.Workers) != 2 || len(p.Switches) == 0 {
		t.Errorf("4-GPU job: %+v, want a switch job on two machines", p)
	}
	if p := jobs[1].Placement; p.SwitchJob != 0 || len(p.Workers) != 1 || !p.Workers[0].Local || p.PS != p.Workers[0].Host {
		t.Errorf("1-GPU job: %+v, want its worker local to its PS and no switch", p)
	}
	// Every switch job installed was removed, and the controller holds none.
	ctl.mu.Lock()
	added, removed := len(ctl.added), len(ctl.removed)
	for _, a := range ctl.added {
		if !slices.Contains(ctl.removed, a.ID) {
			t.Errorf("switch job %d installed but never removed", a.ID)
		}
	}
	ctl.mu.Unlock()
	if added < 2 || removed < added {
		t.Errorf("controller: %d jobs added, %d removed", added, removed)
	}
	if left, err := ctl.Client.Jobs(context.Background()); err != nil || len(left) != 0 {
		t.Errorf("controller still has %v (%v)", left, err)
	}
	for _, m := range s.Machines() {
		if m.FreeGPUs != m.GPUs {
			t.Errorf("%s: %d of %d GPUs free after every job ended", m.Host, m.FreeGPUs, m.GPUs)
		}
	}
	// A restarted service keeps the history and numbers on.
	s.Close()
	s2 := newTestService(t, dir, ctl, c, unreachableHosts(c))
	defer s2.Close()
	if got := len(s2.Jobs()); got != 3 {
		t.Fatalf("restored %d jobs, want 3", got)
	}
	j, err := s2.Submit(sub(1))
	if err != nil || j.ID != 4 {
		t.Errorf("next job id after restart = %d (%v), want 4", j.ID, err)
	}
}

func mustProfile(name string) netpack.Model {
	m, ok := netpack.Profile(name)
	if !ok {
		panic(name)
	}
	return m
}
