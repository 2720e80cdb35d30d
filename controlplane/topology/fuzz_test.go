package topology

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzTopology feeds any bytes to the topology.json parser, and what it accepts to Derive and
// DeriveJob: each answers with a topology or config, or an error saying what is wrong, and never
// panics or hangs.
func FuzzTopology(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "bmv2", "topologies", "*", "topology.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"}},"switches":{"s1":{}},"links":[["h1","s1-p1"],["s1-p2","s1-p3"]]}`,
		`{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"x"}},"switches":{"s1":{}},"links":[["h1","s1-p-1"]]}`,
		`{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01","gpus":-3}},"switches":{"s1":{}},"links":[["h1","s1-p1", "x", 1e400]]}`,
		`{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"},"h2":{"ip":"10.0.0.2/24","mac":"08:00:00:00:00:02"}},"switches":{"s1":{},"s2":{}},"links":[["h1","s1-p1"],["h2","s2-p1"]],"ina":{"jobs":[{"id":1,"ps":"h1","workers":["h2"]}]}}`,
		`{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"}},"switches":{"s1":{}},"links":[["h1","s1-p1"]],"ina":{"jobs":[{"id":-1,"ps":"h9","workers":["h1","h1"]}],"settings":{"active_slots":-5}}}`,
		`{"hosts":{},"switches":{"a-p1":{}},"links":[["a-p1-p2","a-p1-p3"]]}`,
		`null`, `[]`, `{"links":[[1,2]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		topo, err := Parse("topology.json", b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		cfg, err := topo.Derive(endpointsFor(topo))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		_ = cfg.Validate()
		for _, j := range topo.INA.Jobs {
			_, _ = topo.DeriveJob(j)
		}
	})
}
