package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// A vector with deliberately wrong expectations: the runner must report each error by field.
const wrongVector = `{
  "name": "wrong", "description": "expects the wrong things",
  "setup": {
    "ps": [{"job": 1, "port": 7, "mac": "00:00:00:00:00:64", "ip": "10.0.0.100"}],
    "jobs": [{"job": 1, "port": 1, "role": "worker", "worker_bit": 0, "fan_in": 1, "priority_cap": 7, "ina_enabled": true}]
  },
  "steps": [
    {"comment": "fan-in 1 forwards at once", "in": {"port": 1, "packet": {"ina": {"seq": 3, "values": [4]}}},
     "out": [{"port": 7, "packet": {"eth": {"dst": "00:00:00:00:00:64"}, "ina": {"seq": 3, "flags": ["collision"], "bitmap": 1, "values": [5]}}},
             {"port": 3, "packet": {}}],
     "counters": {"global": {"claimed": 1}}}
  ]
}`

func TestRunReportsMismatches(t *testing.T) {
	var v Vector
	if err := json.Unmarshal([]byte(wrongVector), &v); err != nil {
		t.Fatal(err)
	}
	if err := v.Check(); err != nil {
		t.Fatal(err)
	}
	ms, err := Run(NewModelTarget(), &v)
	if err != nil {
		t.Fatal(err)
	}
	r := Report(ms)
	for _, want := range []string{
		"ina.flags: want collision, got none",
		"ina.values[0]: want 5, got 4",
		"port 3 packet 0: missing",
		"counter global claimed: want +1, got +0",
		"counter global completed: want +0, got +1",
		"counter job 1 completed: want +0, got +1",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r, "ina.seq") {
		t.Errorf("report names a field that matched:\n%s", r)
	}
}

func TestRunRejectsBadSetup(t *testing.T) {
	v := Vector{Name: "x", Description: "d", Steps: []Step{{}},
		Setup: Setup{Jobs: []JobSpec{{Job: 0, Port: 1, Role: "worker", FanIn: 1}}}}
	if _, err := Run(NewModelTarget(), &v); err == nil {
		t.Error("job id 0 was accepted")
	}
}
