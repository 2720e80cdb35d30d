package netpack

import (
	"os"
	"strings"
	"testing"
)

func TestParseClusterFile(t *testing.T) {
	c, err := LoadCluster("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Racks) != 2 || len(c.Machines) != 8 || c.TotalGPUs() != 64 || c.Racks[1].Name != "r1" {
		t.Fatalf("unexpected cluster %+v", c)
	}
	if got, want := c.INAPeakBps(0), 262144/20e-6; !near(got, want) {
		t.Fatalf("INA peak %v, want %v", got, want)
	}
	// JSON written by MarshalJSON reads back to the same cluster.
	data, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ParseCluster(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Machines) != 8 || c2.Racks[1].UplinkGbps != 200 || !near(c2.Racks[0].RTTSec, 20e-6) {
		t.Fatalf("round trip changed the cluster: %+v", c2)
	}
}

func TestParseClusterErrors(t *testing.T) {
	cases := map[string]string{
		"malformed":       "racks: [machines: 4",
		"no racks":        "name: x\ncore_gbps: 10",
		"zero core":       "core_gbps: 0\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: 1}]",
		"zero uplink":     "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: 0}]",
		"zero nic":        "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 0, uplink_gbps: 1}]",
		"negative memory": "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: 1, ina_memory_bytes: -1}]",
		"no gpus":         "core_gbps: 10\nracks: [{machines: 1, nic_gbps: 1, uplink_gbps: 1}]",
		"unknown field":   "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbs: 1}]",
		"too many":        "core_gbps: 10\nracks: [{repeat: 100000, machines: 100000, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: 1}]",
		"negative rtt":    "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: 1, ina_memory_bytes: 10, rtt_us: -5}]",
		"infinite uplink": "core_gbps: 10\nracks: [{machines: 1, gpus_per_machine: 1, nic_gbps: 1, uplink_gbps: .inf}]",
		"not a document":  "- 1\n- 2",
	}
	for name, text := range cases {
		if _, err := ParseCluster([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "panic") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := LoadCluster("testdata/missing.yaml"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseJobs(t *testing.T) {
	jobs, err := LoadJobs("testdata/jobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 || jobs[0].Model.Name != "vgg16" || jobs[3].Model.GradientBytes != 2e8 {
		t.Fatalf("unexpected jobs %+v", jobs)
	}
	if _, err := ParseJobs([]byte(`[{"id": "a", "gpus": 2, "model": "resnet50", "iterations": 10}]`)); err != nil {
		t.Fatalf("JSON list: %v", err)
	}
	bad := map[string]string{
		"malformed":     "jobs: [",
		"empty":         "",
		"unknown model": "- {id: a, gpus: 1, model: nosuch, iterations: 1}",
		"zero gpus":     "- {id: a, gpus: 0, model: vgg16, iterations: 1}",
		"no iterations": "- {id: a, gpus: 1, model: vgg16}",
		"duplicate":     "- {id: a, gpus: 1, model: vgg16, iterations: 1}\n- {id: a, gpus: 1, model: vgg16, iterations: 1}",
		"bad inline":    "- {id: a, gpus: 1, model: {name: x, gradient_bytes: 0, compute_sec: 1}, iterations: 1}",
		"unknown field": "- {id: a, gpu: 1, model: vgg16, iterations: 1}",
		"scalar":        "42",
		"negative time": "- {id: a, gpus: 1, model: vgg16, iterations: 1, submit: -3}",
	}
	for name, text := range bad {
		if _, err := ParseJobs([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestImpossibleJob(t *testing.T) {
	c := mustUniform(t, 1, 2, 4)
	j := testJob("big", 9, 1e6, 0.1)
	err := j.Validate(c)
	if err == nil || !strings.Contains(err.Error(), "needs 9 GPUs") {
		t.Fatalf("want a clear error, got %v", err)
	}
	for _, name := range PolicyNames() {
		pol, _ := NewPolicy(name, Options{})
		if ps := pol.Schedule(NewState(c), []*Job{j}); len(ps) != 0 {
			t.Fatalf("%s placed an impossible job", name)
		}
	}
}

func TestProfilesValid(t *testing.T) {
	for _, n := range ProfileNames() {
		m, _ := Profile(n)
		if err := m.Validate(); err != nil || m.Source == "" || m.Params*4 != m.GradientBytes {
			t.Errorf("profile %s: %v (source %q)", n, err, m.Source)
		}
	}
}

func FuzzParseCluster(f *testing.F) {
	seed, _ := os.ReadFile("testdata/cluster.yaml")
	f.Add(seed)
	f.Add([]byte(`{"core_gbps": 10, "racks": [{"machines": 2, "gpus_per_machine": 4, "nic_gbps": 100, "uplink_gbps": 100}]}`))
	f.Add([]byte("racks: [{repeat: -1}]"))
	f.Add([]byte("core_gbps: .nan"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCluster(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseCluster returned an invalid cluster: %v", err)
		}
		if len(c.Machines) <= 4096 {
			_ = Estimate(c, nil, Joint)
		}
	})
}

func FuzzParseJobs(f *testing.F) {
	seed, _ := os.ReadFile("testdata/jobs.yaml")
	f.Add(seed)
	f.Add([]byte(`[{"id": "a", "gpus": 2, "model": "resnet50", "iterations": 10}]`))
	f.Add([]byte("- {id: a, gpus: 1, model: {name: x, gradient_bytes: 1e300, compute_sec: 1e-300}, iterations: 1}"))
	f.Add([]byte("jobs: [{id: a, model: [1, 2]}]"))
	c, _ := Uniform(UniformSpec{Racks: 2, MachinesPerRack: 2, GPUsPerMachine: 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := ParseJobs(data)
		if err != nil {
			return
		}
		pol, _ := NewPolicy("netpack", Options{})
		st := NewState(c)
		var ok []*Job
		for _, j := range jobs {
			if j.Validate(nil) != nil {
				t.Fatalf("ParseJobs returned an invalid job %+v", j)
			}
			if j.Validate(c) == nil {
				ok = append(ok, j)
			}
		}
		for _, p := range pol.Schedule(st, ok) {
			if err := st.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		_ = Estimate(c, st.Running, Joint)
	})
}

func TestScheduleSkipsBadWaitingJobs(t *testing.T) {
	c := mustUniform(t, 1, 2, 4)
	good := testJob("ok", 2, 1e6, 0.1)
	bad := testJob("bad", 1, 1e6, 0) // zero compute time
	for _, name := range PolicyNames() {
		st := NewState(c)
		pol, _ := NewPolicy(name, Options{})
		ps := pol.Schedule(st, []*Job{nil, bad, good, good})
		if len(ps) != 1 || ps[0].Job != good {
			t.Fatalf("%s: want only the valid job once, got %d placements", name, len(ps))
		}
		if err := st.Add(ps[0]); err != nil {
			t.Fatal(err)
		}
		if again := pol.Schedule(st, []*Job{good}); len(again) != 0 {
			t.Fatalf("%s: placed a running job again", name)
		}
	}
}
