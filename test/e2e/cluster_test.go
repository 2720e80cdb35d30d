package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/worker"
)

const psPort = 1

var (
	psMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x64}
	psIP  = net.IPv4(10, 0, 0, 100)
)

// jobSpec is one job of a test cluster.
type jobSpec struct {
	id        uint16
	workers   int
	priority  uint8
	slotBase  uint16
	window    int
	ina       bool
	values    int // tensor length
	iters     int
	killRank  int // rank that stops after killAfter iterations; -1: none
	killAfter int
	progress  time.Duration // the workers' ProgressTimeout, if not runJobs's
	// noIntegrity turns the integrity lane off for the job's PS and workers.
	noIntegrity bool
}

// In-process RTTs are microseconds: the tests use a 5 ms RTO floor (the default 20 ms is for
// software switches sharing cores with the agents).

// cluster is a model switch, a fabric, one PS on psPort and the jobs' workers.
type cluster struct {
	sw   *model.Switch
	fab  *Fabric
	ps   *ps.Server
	stop context.CancelFunc
	done chan struct{}
	// workers are the last runJobs's workers, by job and rank.
	workers map[uint16][]*worker.Worker
}

func workerPort(job uint16, rank int) uint16 { return 10*job + uint16(rank) + 10 }

func newCluster(t *testing.T, st model.Settings, imp Impairment, seed uint64, jobs []jobSpec) *cluster {
	t.Helper()
	sw := model.New()
	sw.SetSettings(st)
	fab := NewFabric(sw, imp, seed)
	var cfgs []ps.JobConfig
	for _, j := range jobs {
		var ports []uint16
		for r := range j.workers {
			p := workerPort(j.id, r)
			ports = append(ports, p)
			must(t, sw.SetJob(model.JobKey{Job: j.id, Port: p}, model.JobEntry{Role: model.RoleWorker,
				WorkerBit: 1 << uint(r), FanIn: uint8(j.workers), PriorityCap: j.priority, INAEnabled: j.ina}))
		}
		must(t, sw.SetJob(model.JobKey{Job: j.id, Port: psPort}, model.JobEntry{Role: model.RoleResult, McastGroup: j.id}))
		must(t, sw.SetPS(j.id, model.PSEntry{Port: psPort, MAC: [6]byte(psMAC), IP: [4]byte(psIP.To4())}))
		must(t, sw.SetMcastGroup(j.id, ports))
		cfgs = append(cfgs, ps.JobConfig{Job: j.id, Workers: j.workers, Window: j.window, NoIntegrity: j.noIntegrity})
	}
	srv, err := ps.New(ps.Config{MAC: psMAC, IP: psIP, Jobs: cfgs})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := &cluster{sw: sw, fab: fab, ps: srv, stop: cancel, done: make(chan struct{}), workers: map[uint16][]*worker.Worker{}}
	pt := fab.Attach(psPort)
	go func() { defer close(c.done); _ = srv.Serve(ctx, pt) }()
	return c
}

func (c *cluster) close() {
	c.stop()
	<-c.done
	c.fab.Close()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tensor is rank's deterministic input for an iteration.
func tensor(seed uint64, job uint16, rank, iter, n int) []int32 {
	v := make([]int32, n)
	worker.Synthetic(seed, job, rank, iter, v)
	return v
}

// jobResult is what one job's run produced.
type jobResult struct {
	errs       []error // per rank
	mismatches int     // values differing from the exact sum, over all ranks and iterations
	iterations []int   // completed per rank
}

// runJobs runs every job's workers concurrently and checks every result against the exact sum.
// progress is the workers' ProgressTimeout unless the job sets its own.
func (c *cluster) runJobs(t *testing.T, seed uint64, jobs []jobSpec, progress time.Duration) map[uint16]*jobResult {
	t.Helper()
	out := map[uint16]*jobResult{}
	c.workers = map[uint16][]*worker.Worker{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, j := range jobs {
		res := &jobResult{errs: make([]error, j.workers), iterations: make([]int, j.workers)}
		out[j.id] = res
		timeout := progress
		if j.progress != 0 {
			timeout = j.progress
		}
		for r := range j.workers {
			w, err := worker.New(worker.Config{Job: j.id, Rank: r, Workers: j.workers, Priority: j.priority,
				SlotBase: j.slotBase, Window: j.window, SrcMAC: net.HardwareAddr{0x02, 0, 0, byte(j.id), 0, byte(r)},
				DstMAC: psMAC, SrcIP: net.IPv4(10, 0, byte(j.id), byte(r+1)), DstIP: psIP,
				MinRTO: 5 * time.Millisecond, ProgressTimeout: timeout, NoIntegrity: j.noIntegrity}, c.fab.Attach(workerPort(j.id, r)))
			c.workers[j.id] = append(c.workers[j.id], w)
			must(t, err)
			wg.Add(1)
			go func(j jobSpec, r int) {
				defer wg.Done()
				for it := range j.iters {
					if r == j.killRank && it == j.killAfter {
						return // the process died: it sends nothing more
					}
					data := tensor(seed, j.id, r, it, j.values)
					if err := w.AllReduceInt32(context.Background(), data); err != nil {
						mu.Lock()
						res.errs[r] = err
						mu.Unlock()
						return
					}
					want := make([]int64, j.values)
					worker.SyntheticSum(seed, j.id, j.workers, it, want)
					bad := 0
					for i := range data {
						if int64(data[i]) != want[i] {
							bad++
						}
					}
					mu.Lock()
					res.mismatches += bad
					res.iterations[r] = it + 1
					mu.Unlock()
				}
			}(j, r)
		}
	}
	wg.Wait()
	return out
}
