package controlplane

import (
	"fmt"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/inapack/inapack/refswitch/refswitchtest"
)

// benchEntries builds n distinct ina_job worker entries (jobs 1.., ports 0..31).
func benchEntries(s *Schema, n int) []*p4v1.Entity {
	out := make([]*p4v1.Entity, 0, n)
	for i := 0; i < n; i++ {
		job, port := 1+i/32, i%32
		out = append(out, s.jobEntry(job, port, 0, s.action(ActionWorker, 1<<uint(port), 32, 7, 1)))
	}
	return out
}

func updates(ents []*p4v1.Entity, t p4v1.Update_Type) []*p4v1.Update {
	out := make([]*p4v1.Update, len(ents))
	for i, e := range ents {
		out[i] = &p4v1.Update{Type: t, Entity: e}
	}
	return out
}

// BenchmarkInstall measures table entries installed per second into the in-process reference
// switch over loopback gRPC: all in batched WriteRequests versus one update per RPC.
func BenchmarkInstall(b *testing.B) {
	const n = 1024
	for _, batch := range []int{1, 64, DefaultBatchSize} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ref := refswitchtest.Serve(b, "127.0.0.1:0")
			c := newController(b, testConfig(b, "switches: [{name: s1, address: x, device_id: 1, target: ref}]", ref.Addr))
			if err := c.Apply(ctx(b)); err != nil {
				b.Fatal(err)
			}
			st := c.switches["s1"]
			ents := benchEntries(st.schema, n)
			ins, del := updates(ents, p4v1.Update_INSERT), updates(ents, p4v1.Update_DELETE)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := st.conn.Write(ctx(b), ins, batch); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := st.conn.Write(ctx(b), del, DefaultBatchSize); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// BenchmarkReconcileFromEmpty measures a full reconcile (read, diff, batched write) of 256 jobs
// of 4 workers each (256 ina_ps, 1024 ina_worker, 256 ina_result entries and 256 groups) into an
// empty reference switch.
func BenchmarkReconcileFromEmpty(b *testing.B) {
	var sbuf strings.Builder
	sbuf.WriteString("switches: [{name: s1, address: x, device_id: 1, target: ref}]\njobs:\n")
	for j := 1; j <= 256; j++ {
		fmt.Fprintf(&sbuf, "  - {id: %d, switches: [{switch: s1, ps: {port: 9, mac: \"02:00:00:00:00:09\", ip: 10.0.0.9}, "+
			"members: [{port: 1, worker_bit: 0}, {port: 2, worker_bit: 1}, {port: 3, worker_bit: 2}, {port: 4, worker_bit: 3}], "+
			"result: {port: 9, multicast_group: %d}}]}\n", j, j)
	}
	ref := refswitchtest.Serve(b, "127.0.0.1:0")
	c := newController(b, testConfig(b, sbuf.String(), ref.Addr))
	if err := c.Apply(ctx(b)); err != nil {
		b.Fatal(err)
	}
	entries := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ref.Switch.Reset()
		b.StartTimer()
		d, err := c.Reconcile(ctx(b), "s1")
		if err != nil {
			b.Fatal(err)
		}
		entries += len(d.Insert) + len(d.Modify)
	}
	b.ReportMetric(float64(entries)/b.Elapsed().Seconds(), "entries/s")
}
