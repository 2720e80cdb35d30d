package refswitch

import (
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/p4src/wire"
)

// socketless builds a dataplane whose ports have queues but no sockets: frames stay queued.
func socketless(queueLen int, ports ...uint16) *dataplane {
	d := &dataplane{sw: model.New(), log: slog.New(slog.DiscardHandler), ports: map[uint16]*port{}}
	for _, p := range ports {
		d.ports[p] = &port{num: p, q: newEgressQueue(queueLen)}
	}
	d.index()
	d.sw.QueueDepth = func(p uint16) uint32 { return uint32(d.ports[p].q.depth.Load()) }
	return d
}

// process runs one frame as a port's reader does.
func (d *dataplane) processOne(in uint16, frame []byte) { d.process(&rxState{}, in, frame) }

// queued is the number of frames in a port's egress queue.
func (d *dataplane) queued(p uint16) int { return int(d.ports[p].q.depth.Load()) }

// pop takes the oldest frame of a port's egress queue.
func (d *dataplane) pop(p uint16) []byte {
	q := &d.ports[p].q
	f := q.popAll(nil)
	if len(f) == 0 {
		return nil
	}
	q.depth.Add(-int64(len(f)))
	for _, g := range f[1:] { // the rest goes back, in order
		q.push(g)
	}
	return f[0]
}

func TestTailDropAndNoPipeline(t *testing.T) {
	d := socketless(2, 0)
	if err := d.sw.SetRoute(model.Route{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 0}); err != nil {
		t.Fatal(err)
	}
	f := ipv4Frame(net.IP{10, 0, 0, 1})
	d.processOne(0, f)
	if d.counters.noPipeline.Load() != 1 || d.queued(0) != 0 {
		t.Fatal("a frame was forwarded before any pipeline was pushed")
	}
	d.configured.Store(true)
	for range 3 {
		d.processOne(0, f)
	}
	if d.queued(0) != 2 || d.ports[0].st.TailDrops.Load() != 1 {
		t.Fatalf("queue %d, tail drops %d; want 2 and 1", d.queued(0), d.ports[0].st.TailDrops.Load())
	}
	// A route to a port with no interface is counted, not a crash.
	if err := d.sw.SetRoute(model.Route{Prefix: netip.MustParsePrefix("10.9.0.0/16"), Port: 9}); err != nil {
		t.Fatal(err)
	}
	d.processOne(0, ipv4Frame(net.IP{10, 9, 0, 1}))
	if d.counters.noPort.Load() != 1 {
		t.Fatal("no_port_drops not counted")
	}
	if s := d.stats(); s.NoPipelineDrops != 1 || s.Ports[0].QueueDepth != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestQueueDepthMarksECN: the egress queue's depth is the model's enq_qdepth.
func TestQueueDepthMarksECN(t *testing.T) {
	d := socketless(8, 1, 3)
	d.configured.Store(true)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.sw.SetJob(model.JobKey{Job: 7, Port: 1}, model.JobEntry{Role: model.RoleWorker, WorkerBit: 1, FanIn: 1, INAEnabled: true}))
	must(d.sw.SetPS(7, model.PSEntry{Port: 3}))
	st := model.DefaultSettings()
	st.ECNThreshold = 2
	d.sw.SetSettings(st)
	for i := range 4 {
		d.processOne(1, dataFrame(7, 0, uint32(i), 1))
	}
	var marked []bool
	for range 4 {
		f, ok := inaOf(d.pop(3))
		if !ok {
			t.Fatal("not an INA frame")
		}
		marked = append(marked, f.INA.Flags&wire.FlagECN != 0)
	}
	if want := []bool{false, false, true, true}; !slices.Equal(marked, want) {
		t.Fatalf("ECN marks %v, want %v (threshold 2 on queue depths 0,1,2,3)", marked, want)
	}
}
