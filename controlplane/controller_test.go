package controlplane

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch/refswitchtest"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

const refConfig = `
controller: {dial_timeout: 2s, poll_interval: 1h}
switches:
  - name: s1
    address: set-by-test
    device_id: 1
    target: ref
    settings: {preempt: false, release: atp, ecn_threshold: 100, active_slots: 64}
    routes:
      - {prefix: 10.0.0.0/24, port: 1, mac: "02:00:00:00:00:01"}
jobs:
  - id: 5
    priority_cap: 4
    switches:
      - switch: s1
        ps: {port: 3, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        members:
          - {port: 1, worker_bit: 0}
          - {port: 2, worker_bit: 1}
        result: {port: 3, multicast_group: 5}
`

func job6() JobConfig {
	cap6 := 9
	return JobConfig{ID: 6, PriorityCap: &cap6, Switches: []JobSwitch{{
		Switch:  "s1",
		PS:      PSConfig{Port: 4, MAC: "02:00:00:00:00:04", IP: "10.0.0.4"},
		Members: []Member{{Port: 1, WorkerBit: 0}, {Port: 2, WorkerBit: 1}},
		Result:  &ResultConfig{Port: 4, MulticastGroup: 6},
	}}}
}

func checkJob5(t *testing.T, sw *model.Switch) {
	t.Helper()
	w, ok := sw.Job(model.JobKey{Job: 5, Port: 2})
	if !ok || w.WorkerBit != 2 || w.FanIn != 2 || w.PriorityCap != 4 || !w.INAEnabled {
		t.Fatalf("job 5 port 2 = %+v, %v", w, ok)
	}
	if r, ok := sw.Job(model.JobKey{Job: 5, Port: 3}); !ok || r.McastGroup != 5 {
		t.Fatalf("job 5 result entry = %+v, %v", r, ok)
	}
	if ps, ok := sw.PS(5); !ok || ps.Port != 3 || ps.IP != [4]byte{10, 0, 0, 3} {
		t.Fatalf("job 5 ps = %+v, %v", ps, ok)
	}
	if g := sw.McastGroups()[5]; len(g) != 2 {
		t.Fatalf("group 5 = %v", g)
	}
}

func TestApplyInstallsAndIsIdempotent(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	c := newController(t, testConfig(t, refConfig, ref.Addr))
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	checkJob5(t, ref.Switch)
	st := ref.Switch.Settings()
	if st.Preempt || !st.ReleaseOnResult || st.ECNThreshold != 100 || st.ActiveSlots != 64 {
		t.Fatalf("settings = %+v", st)
	}
	if r := ref.Switch.Routes(); len(r) != 1 || r[0].Port != 1 {
		t.Fatalf("routes = %+v", r)
	}
	d, err := c.Reconcile(ctx(t), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Empty() {
		t.Fatalf("second reconcile wrote %v", d)
	}
	// Drift: an entry someone else added is deleted, one someone deleted is restored.
	ref.Switch.DeletePS(5)
	ref.Switch.SetPS(9, model.PSEntry{Port: 7})
	d, err = c.Reconcile(ctx(t), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Insert) != 1 || len(d.Delete) != 1 {
		t.Fatalf("drift diff = %v", d)
	}
	if _, ok := ref.Switch.PS(9); ok {
		t.Fatal("foreign ina_ps entry not deleted")
	}
	checkJob5(t, ref.Switch)
}

func TestJobLifecycle(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	c := newController(t, testConfig(t, refConfig, ref.Addr))
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddJob(ctx(t), job6()); err != nil {
		t.Fatal(err)
	}
	if e, ok := ref.Switch.Job(model.JobKey{Job: 6, Port: 1}); !ok || e.PriorityCap != 9 {
		t.Fatalf("job 6 not installed: %+v %v", e, ok)
	}
	if err := c.AddJob(ctx(t), job6()); !errors.Is(err, ErrJobExists) {
		t.Fatalf("second add: %v", err)
	}
	bad := job6()
	bad.ID, bad.Switches[0].Result.MulticastGroup = 7, 5 // group 5 belongs to job 5
	if err := c.AddJob(ctx(t), bad); err == nil || !strings.Contains(err.Error(), "multicast group 5") {
		t.Fatalf("clashing group accepted: %v", err)
	}

	// Priority cap and INA switch.
	three, off := 3, false
	if err := c.UpdateJob(ctx(t), 6, &three, &off); err != nil {
		t.Fatal(err)
	}
	if e, _ := ref.Switch.Job(model.JobKey{Job: 6, Port: 2}); e.PriorityCap != 3 || e.INAEnabled {
		t.Fatalf("job 6 after update: %+v", e)
	}
	checkJob5(t, ref.Switch)

	// Slots 0..3 held by job 5, 10..12 by job 6, slot 20 was job 6's but is free.
	for i := 0; i < 4; i++ {
		ref.Switch.SetSlot(i, model.Slot{Job: 5, Seq: 1, Count: 1, Bitmap: 1})
	}
	for i := 10; i < 13; i++ {
		ref.Switch.SetSlot(i, model.Slot{Job: 6, Seq: 2, Count: 1, Bitmap: 2, Priority: 3})
	}
	if err := c.RemoveJob(ctx(t), 6); err != nil {
		t.Fatal(err)
	}
	for k := range ref.Switch.Jobs() {
		if k.Job == 6 {
			t.Fatalf("job 6 entry %+v left", k)
		}
	}
	if _, ok := ref.Switch.PS(6); ok {
		t.Fatal("job 6 ina_ps left")
	}
	if _, ok := ref.Switch.McastGroups()[6]; ok {
		t.Fatal("job 6 group left")
	}
	for i := 10; i < 13; i++ {
		if s := ref.Switch.Slot(i); s.Count != 0 || s.Job != 0 {
			t.Fatalf("slot %d of removed job 6 not cleared: %+v", i, s)
		}
	}
	for i := 0; i < 4; i++ {
		if s := ref.Switch.Slot(i); s.Count != 1 || s.Job != 5 {
			t.Fatalf("slot %d of job 5 touched: %+v", i, s)
		}
	}
	checkJob5(t, ref.Switch)
	if err := c.RemoveJob(ctx(t), 6); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("second remove: %v", err)
	}
	if len(c.Jobs()) != 1 {
		t.Fatalf("jobs = %+v", c.Jobs())
	}
}

func TestPollCountersAndSlots(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	c := newController(t, testConfig(t, refConfig, ref.Addr))
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	ref.Switch.SetSlot(7, model.Slot{Job: 5, Seq: 1, Count: 1, Bitmap: 1})
	// An INA packet for a job the switch does not know counts drop_unknown_job globally.
	ref.Switch.Process(1, make([]byte, 314))
	snap, err := c.Poll(ctx(t), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if snap.SlotsErr != "" || snap.SlotsHeld[5] != 1 {
		t.Fatalf("slots: %+v err %q", snap.SlotsHeld, snap.SlotsErr)
	}
	if _, ok := snap.JobEvents[5]["claimed"]; !ok {
		t.Fatalf("job 5 counters not read: %+v", snap.JobEvents)
	}
}

func TestUnreachableSwitch(t *testing.T) {
	// A port nothing listens on: the error names the address, within the dial timeout. The port is
	// closed before the dial (a stopped gRPC server may close its listener only later, and a
	// connection accepted meanwhile is reset instead of refused).
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	cfg := testConfig(t, refConfig, addr)
	cfg.Controller.DialTimeout = Duration(300 * time.Millisecond)
	c := newController(t, cfg)
	err = c.Apply(ctx(t))
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "unreachable") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("got %v", err)
	}
	if s := c.Status()[0]; s.Connected || s.LastError == "" {
		t.Fatalf("status %+v", s)
	}
}

func TestLowerElectionIDIsNotPrimary(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	hi := testConfig(t, refConfig, ref.Addr)
	hi.Switches[0].ElectionID = 10
	if err := newController(t, hi).Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	lo := testConfig(t, refConfig, ref.Addr)
	lo.Switches[0].ElectionID = 5
	err := newController(t, lo).Apply(ctx(t))
	if err == nil || !strings.Contains(err.Error(), "not primary") {
		t.Fatalf("lower election id: %v", err)
	}
}

func TestWriteErrorNamesTable(t *testing.T) {
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	c := newController(t, testConfig(t, refConfig, ref.Addr))
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	st := c.switches["s1"]
	j := c.cfg.Job(5)
	es, err := st.schema.JobEntities(j, &j.Switches[0])
	if err != nil {
		t.Fatal(err)
	}
	err = st.conn.Write(ctx(t), updates(es[:1], p4v1.Update_INSERT), 10)
	if err == nil || !strings.Contains(err.Error(), "table ina_ps") || !strings.Contains(err.Error(), "AlreadyExists") {
		t.Fatalf("duplicate insert: %v", err)
	}
}

// Two workers of job 5 behind port 1 (members 0 and 1) and one behind port 2: each is its own
// ina_worker entry with its own bit, the fan-in counts workers, not ports, and the result group
// lists port 1 once.
func TestSeveralMembersPerPort(t *testing.T) {
	cfg := strings.Replace(refConfig, `          - {port: 1, worker_bit: 0}
`, `          - {port: 1, worker_bit: 0}
          - {port: 1, member: 1, worker_bit: 2}
`, 1)
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	c := newController(t, testConfig(t, cfg, ref.Addr))
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		port   uint16
		member uint8
		bit    uint32
	}{{1, 0, 1}, {1, 1, 4}, {2, 0, 2}} {
		e, ok := ref.Switch.Job(model.JobKey{Job: 5, Port: w.port, Member: w.member})
		if !ok || e.Role != model.RoleWorker || e.WorkerBit != w.bit || e.FanIn != 3 {
			t.Errorf("port %d member %d: %+v %v, want worker bit %#x fan_in 3", w.port, w.member, e, ok, w.bit)
		}
	}
	if _, ok := ref.Switch.Job(model.JobKey{Job: 5, Port: 2, Member: 1}); ok {
		t.Error("port 2 has an entry for member 1")
	}
	if g := ref.Switch.McastGroups()[5]; !slices.Equal(g, []uint16{1, 2}) {
		t.Errorf("group 5 = %v, want [1 2]", g)
	}
	if d, err := c.Reconcile(ctx(t), "s1"); err != nil || !d.Empty() {
		t.Fatalf("second reconcile: %v %v", d, err)
	}
}
