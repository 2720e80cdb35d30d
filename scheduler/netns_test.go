package scheduler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/emu"
	"github.com/inapack/inapack/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// TestNetnsScheduler runs the service on an emulated two-rack cluster (namespaces, reference
// switches, the controller): jobs complete exact on the hosts NetPack chose and leave nothing on
// the switches; a killed worker fails its job with the reason and the queue goes on; a restarted
// service re-attaches to a running job.
func TestNetnsScheduler(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root (network namespaces, veth pairs, AF_PACKET)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: iproute2 (ip) not on PATH")
	}
	bin := testbin.Build(t, "./cmd/refswitch", "./cmd/inactl", "./cmd/ina-ps", "./cmd/ina-worker")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topoPath := filepath.Join("..", "bmv2", "topologies", "two-racks", "topology.json")
	cl, err := emu.Start(ctx, emu.Config{Topology: topoPath, Prefix: fmt.Sprintf("st%d", os.Getpid()%10000),
		Switch: "ref", Bin: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c, err := NewCluster(cl.Topo, ClusterParams{})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]HostAccess{}
	for h, ns := range cl.Hosts {
		hosts[h] = HostAccess{Netns: ns.Netns, Iface: ns.Iface}
	}
	// h4 is reached as a Mininet host is: through the network namespace of a process in it.
	if _, err := exec.LookPath("nsenter"); err == nil {
		shell := exec.Command("ip", "netns", "exec", cl.Hosts["h4"].Netns, "sleep", "3600")
		if err := shell.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { shell.Process.Kill(); shell.Wait() }()
		hosts["h4"] = HostAccess{PID: shell.Process.Pid}
	} else {
		t.Log("nsenter not on PATH: every host reached by namespace name")
	}
	ctl := api.NewClient(cl.API, "")
	dir := t.TempDir()
	newService := func() *Service {
		s, err := New(Config{Cluster: c, Hosts: hosts, Controller: ctl, Bin: bin, StateDir: dir,
			ProgressTimeout: 5 * time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := newService()
	defer func() {
		for _, j := range s.Jobs() {
			if !j.State.Final() {
				_ = s.Cancel(j.ID)
			}
		}
		s.Close()
	}()
	waitJob := func(id int, done func(Job) bool) Job {
		t.Helper()
		for {
			j, err := s.Job(id)
			if err != nil {
				t.Fatal(err)
			}
			if done(j) {
				return j
			}
			select {
			case <-ctx.Done():
				t.Fatalf("job %d: %v; now %+v", id, ctx.Err(), j)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	final := func(j Job) bool { return j.State.Final() }
	exact := func(j Job) {
		t.Helper()
		if j.State != Completed || j.Progress.Wrong != 0 || j.Progress.Exact != j.Iterations*len(j.Placement.Workers) {
			t.Errorf("job %d: %s %q, progress %+v; want completed with every all-reduce exact", j.ID, j.State, j.Reason, j.Progress)
		}
	}
	noSwitchState := func() {
		t.Helper()
		left, err := ctl.Jobs(ctx)
		if err != nil || len(left) != 0 {
			t.Errorf("controller still has jobs %+v (%v)", left, err)
		}
		for _, m := range s.Machines() {
			if m.FreeGPUs != m.GPUs {
				t.Errorf("%s: %d of %d GPUs free", m.Host, m.FreeGPUs, m.GPUs)
			}
		}
	}

	t.Run("exact", func(t *testing.T) {
		var ids []int
		for _, g := range []int{4, 2, 3} {
			j, err := s.Submit(sub(g))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, j.ID)
		}
		for _, id := range ids {
			j := waitJob(id, final)
			exact(j)
			if j.JCTSec <= 0 || j.RunSec <= 0 || j.RunSec > j.JCTSec || j.Progress.ThroughputMbps <= 0 || j.Progress.Sent == 0 {
				t.Errorf("job %d: jct %v, run %v, throughput %v, sent %d", id, j.JCTSec, j.RunSec, j.Progress.ThroughputMbps, j.Progress.Sent)
			}
			t.Logf("job %d: %s on %v ps %s, switch job %d, %.1f Mbit/s, JCT %.2fs", id, j.State, hostsOf(j.Placement),
				j.Placement.PS, j.Placement.SwitchJob, j.Progress.ThroughputMbps, j.JCTSec)
		}
		noSwitchState()
	})

	t.Run("killed worker", func(t *testing.T) {
		long := sub(4)
		long.Iterations = 100000
		victim, err := s.Submit(long)
		if err != nil {
			t.Fatal(err)
		}
		j := waitJob(victim.ID, func(j Job) bool { return j.State == Running && j.Progress.Iterations >= 3 || j.State.Final() })
		var pid int
		var label string
		for _, p := range j.Procs {
			if p.Role == "worker" && p.Rank == 0 {
				pid, label = p.PID, p.label()
			}
		}
		if pid == 0 {
			t.Fatalf("no rank 0 worker in %+v", j)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		next, err := s.Submit(sub(4))
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(victim.ID, final)
		if j.State != Failed || !strings.Contains(j.Reason, label+" died") || !strings.Contains(j.Reason, "killed") {
			t.Errorf("killed job: %s %q, want failed saying %q died (killed)", j.State, j.Reason, label)
		}
		exact(waitJob(next.ID, final))
		noSwitchState()
	})

	t.Run("restart", func(t *testing.T) {
		long := sub(4)
		long.Iterations = 300
		j, err := s.Submit(long)
		if err != nil {
			t.Fatal(err)
		}
		waitJob(j.ID, func(j Job) bool { return j.State == Running && j.Progress.Iterations >= 2 || j.State.Final() })
		s.Close()
		s = newService() // the agents ran on meanwhile
		got := waitJob(j.ID, final)
		exact(got)
		noSwitchState()
	})
}
