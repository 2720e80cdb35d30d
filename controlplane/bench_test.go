package controlplane

import (
	"fmt"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// benchEntries builds n distinct ina_job worker entries (jobs 1.., ports 0..31).
func benchEntries(s *Schema, n int) []*p4v1.Entity {
	out := make([]*p4v1.Entity, 0, n)
	for i := 0; i < n; i++ {
		job, port := 1+i/32, i%32
		out = append(out, s.jobEntry(job, port, s.action(ActionWorker, 1<<uint(port), 32, 7, 1)))
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
			ref := startRef(b, "127.0.0.1:0")
			c := newController(b, testConfig(b, "switches: [{name: s1, address: x, device_id: 1, target: ref}]", ref.addr))
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
