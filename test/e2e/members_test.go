package e2e

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
	"github.com/inapack/inapack/worker"
)

// hostLink shares the host end of one switch port among n agents, as pods on one node share its
// link: every frame the switch sends out the port reaches each agent, and each sends through it.
func hostLink(t *testing.T, nic *transport.Mem, n int) []*transport.Mem {
	t.Helper()
	agents := make([]*transport.Mem, n)
	for i := range agents {
		agents[i] = transport.NewMem(nic.Send, 4096)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			k, err := nic.Recv(buf, time.Now().Add(50*time.Millisecond))
			if err == transport.ErrTimeout {
				continue
			}
			if err != nil {
				return
			}
			for _, a := range agents {
				a.Deliver(append([]byte(nil), buf[:k]...))
			}
		}
	}()
	t.Cleanup(func() { nic.Close(); <-done })
	return agents
}

// Two workers of one job behind one switch port (members 0 and 1, ranks 0 and 1) and a third
// behind another (rank 2), over lossy, duplicating, reordering links: every all-reduce is exact,
// the switch aggregated (completed > 0) and dropped nothing as a bad port.
func TestTwoMembersBehindOnePort(t *testing.T) {
	const job, portA, portB, n, iters, values = 1, 20, 21, 3, 6, 3000
	sw := model.New()
	sw.SetSettings(model.Settings{Preempt: true, ECNThreshold: wire.MaxECNThreshold, ActiveSlots: 64})
	fab := NewFabric(sw, Impairment{Loss: 0.01, Dup: 0.01, Reorder: 0.01}, 7)
	defer fab.Close()
	ranks := []struct {
		port   uint16
		member uint8
	}{{portA, 0}, {portA, 1}, {portB, 0}}
	for r, at := range ranks {
		must(t, sw.SetJob(model.JobKey{Job: job, Port: at.port, Member: at.member}, model.JobEntry{Role: model.RoleWorker,
			WorkerBit: 1 << r, FanIn: n, PriorityCap: 7, INAEnabled: true}))
	}
	must(t, sw.SetJob(model.JobKey{Job: job, Port: psPort}, model.JobEntry{Role: model.RoleResult, McastGroup: job}))
	must(t, sw.SetPS(job, model.PSEntry{Port: psPort, MAC: [6]byte(psMAC), IP: [4]byte(psIP.To4())}))
	must(t, sw.SetMcastGroup(job, []uint16{portA, portB}))
	srv, err := ps.New(ps.Config{MAC: psMAC, IP: psIP, Jobs: []ps.JobConfig{{Job: job, Workers: n, Window: 16}}})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ctx, fab.Attach(psPort)) }()
	defer func() { cancel(); <-served }()

	ends := append(hostLink(t, fab.Attach(portA), 2), fab.Attach(portB))
	errs := make([]error, n)
	bad := make([]int, n)
	var wg sync.WaitGroup
	for r, at := range ranks {
		// Ranks 0 and 1 are one host: one MAC and IP, told apart by the member index only.
		host := byte(at.port)
		w, err := worker.New(worker.Config{Job: job, Rank: r, Workers: n, Member: at.member, Window: 16,
			SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, host}, DstMAC: psMAC, SrcIP: net.IPv4(10, 0, 1, host), DstIP: psIP,
			MinRTO: 5 * time.Millisecond, ProgressTimeout: 10 * time.Second}, ends[r])
		must(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range iters {
				data := tensor(11, job, r, it, values)
				if errs[r] = w.AllReduceInt32(context.Background(), data); errs[r] != nil {
					return
				}
				want := make([]int64, values)
				worker.SyntheticSum(11, job, n, it, want)
				for i := range data {
					if int64(data[i]) != want[i] {
						bad[r]++
					}
				}
			}
		}()
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil || bad[r] != 0 {
			t.Errorf("rank %d: %v, %d values not exact", r, errs[r], bad[r])
		}
	}
	ev := sw.Events()
	if ev[wire.EventCompleted].Packets == 0 || ev[wire.EventAggregated].Packets == 0 {
		t.Errorf("the switch aggregated nothing: completed %d, aggregated %d", ev[wire.EventCompleted].Packets, ev[wire.EventAggregated].Packets)
	}
	if d := ev[wire.EventDropBadPort].Packets; d != 0 {
		t.Errorf("%d packets dropped as drop_bad_port", d)
	}
	t.Logf("switch: completed %d aggregated %d duplicate %d; links: lost %d duplicated %d reordered %d",
		ev[wire.EventCompleted].Packets, ev[wire.EventAggregated].Packets, ev[wire.EventDuplicate].Packets,
		fab.Lost.Load(), fab.Duplicated.Load(), fab.Reordered.Load())
}
