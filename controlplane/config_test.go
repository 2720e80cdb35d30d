package controlplane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExamplesValidate(t *testing.T) {
	files, _ := filepath.Glob("examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example configs")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(b, f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

const goodConfig = `
switches:
  - name: s1
    address: 127.0.0.1:1
    target: ref
    routes:
      - {prefix: 10.0.0.0/24, port: 1, mac: "02:00:00:00:00:01"}
jobs:
  - id: 5
    switches:
      - switch: s1
        ps: {port: 3, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        members:
          - {port: 1, worker_bit: 0}
          - {port: 2, worker_bit: 1}
        result: {port: 3, multicast_group: 5}
`

func TestGoodConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(goodConfig), "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	j := cfg.Job(5)
	if j == nil || j.Cap() != DefaultPriorityCap || !j.INAEnabled() || j.Switches[0].LocalFanIn() != 2 {
		t.Fatalf("defaults wrong: %+v", j)
	}
	if got := j.Switches[0].Result.ReplicaPorts(&j.Switches[0]); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("replicas = %v, want member ports [1 2]", got)
	}
	if l := j.Switches[0].Members[1].Pos.At("worker_bit"); l != 15 {
		t.Fatalf("worker_bit of member 1 recorded at line %d, want 15", l)
	}
	// A second worker behind port 1 (member 1) is valid, and the group lists port 1 once.
	cfg, err = ParseConfig([]byte(strings.Replace(goodConfig, "{port: 2, worker_bit: 1}", "{port: 1, member: 1, worker_bit: 1}", 1)), "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	js := &cfg.Job(5).Switches[0]
	if got := js.Result.ReplicaPorts(js); len(got) != 1 || got[0] != 1 || js.LocalFanIn() != 2 {
		t.Fatalf("replicas = %v, fan_in %d: want [1] and 2", got, js.LocalFanIn())
	}
}

// Each case replaces one line of goodConfig and expects an error on a given line naming a field.
func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name, from, to string
		line           int
		want           string
	}{
		{"job id zero", "  - id: 5", "  - id: 0", 9, "jobs[0].id: job id 0 out of 1..1023"},
		{"job id too big", "  - id: 5", "  - id: 1024", 9, "out of 1..1023"},
		{"worker bit reused", "{port: 2, worker_bit: 1}", "{port: 2, worker_bit: 0}", 15, "members[1].worker_bit: worker bit 0 already used by line 14"},
		{"duplicate member", "{port: 2, worker_bit: 1}", "{port: 1, worker_bit: 1}", 15, "members[1].member: port 1 member 0 already used by line 14"},
		{"member range", "{port: 2, worker_bit: 1}", "{port: 1, member: 16, worker_bit: 1}", 15, "members[1].member: 16 out of 0..15"},
		{"member on result port", "{port: 2, worker_bit: 1}", "{port: 3, member: 1, worker_bit: 1}", 16, "result.port: port 3 already used"},
		{"result on member port", "result: {port: 3,", "result: {port: 2,", 16, "result.port: port 2 already used"},
		{"unknown switch", "      - switch: s1", "      - switch: nope", 11, `unknown switch "nope"`},
		{"bad target", "    target: ref", "    target: p4", 5, `unknown target "p4"`},
		{"bad mac", `{port: 3, mac: "02:00:00:00:00:03"`, `{port: 3, mac: "zz"`, 12, `ps.mac: "zz" is not a MAC`},
		{"bad prefix", "{prefix: 10.0.0.0/24,", "{prefix: 10.0.0.0/40,", 7, "routes[0].prefix"},
		{"port range", "{port: 1, worker_bit: 0}", "{port: 600, worker_bit: 0}", 14, "port 600 out of 0..511"},
		{"bit range", "{port: 1, worker_bit: 0}", "{port: 1, worker_bit: 32}", 14, "32 out of 0..31"},
		{"group zero", "multicast_group: 5}", "multicast_group: 0}", 16, "multicast group 0 out of"},
		{"unicast port not a replica", "multicast_group: 5}", "multicast_group: 5, ports: [1, 2, 4], unicast: [{worker_bit: 1, port: 3}]}", 16, "result.unicast[0].port: port 3 is not one of the group's ports"},
		{"unicast for a member", "multicast_group: 5}", "multicast_group: 5, ports: [1, 2, 4], unicast: [{worker_bit: 1, port: 4}]}", 16, "result.unicast[0].worker_bit: worker bit 1 is a member's on this switch"},
		{"unicast for no worker", "multicast_group: 5}", "multicast_group: 5, ports: [1, 2, 4], unicast: [{worker_bit: 7, port: 4}]}", 16, "result.unicast[0].worker_bit: worker bit 7 is no member's of this job"},
		{"token in clear off-host", "    address: 127.0.0.1:1", "    address: 10.0.0.9:1\n    token_file: t", 5, "token_file: the token would cross the network in clear"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(goodConfig, tc.from, tc.to, 1)
			if text == goodConfig {
				t.Fatalf("pattern %q not in config", tc.from)
			}
			cfg, err := ParseConfig([]byte(text), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			var verr ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("got %v, want a ValidationError", err)
			}
			for _, e := range verr {
				if e.Line == tc.line && strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no error at line %d containing %q; got:\n%v", tc.line, tc.want, err)
		})
	}
}

func TestFanInMismatch(t *testing.T) {
	text := strings.Replace(goodConfig, "        result:", "        fan_in: 3\n        result:", 1)
	cfg, err := ParseConfig([]byte(text), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "c.yaml:16: jobs[0].switches[0].fan_in: fan_in 3 does not match the 2 members") {
		t.Fatalf("got %v", err)
	}
}

func TestDuplicates(t *testing.T) {
	text := goodConfig + `  - id: 5
    switches:
      - switch: s1
        ps: {port: 3, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        transit_ports: [4]
        result: {port: 3, multicast_group: 5, ports: [1]}
`
	text = strings.Replace(text, "switches:\n  - name: s1", "switches:\n  - name: s1\n    address: x:1\n    target: ref\n  - name: s1", 1)
	cfg, err := ParseConfig([]byte(text), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{`switch "s1" already defined`, "job 5 already defined", "multicast group 5 on switch \"s1\" already used by job 5"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"switches:\n  - name: a\n    adress: x\n", "c.yaml:3: switches[0].adress: unknown field"},
		{"jobs:\n  - id: seven\n", "c.yaml:2: jobs[0].id:"},
		{"jobs: 5\n", "c.yaml:1: jobs: expected a list"},
		{"controller:\n  poll_interval: soon\n", `c.yaml:2: controller.poll_interval: bad duration "soon"`},
		{"switches:\n  - name: a\n    name: b\n", "c.yaml:3: switches[0].name: field given twice"},
		{"a: [", "c.yaml: yaml:"},
		{"5\n", "c.yaml:1: top level: expected a mapping"},
	} {
		_, err := ParseConfig([]byte(tc.text), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("jobs: [{id: 1, switches: [{switch: a, members: [{port: 1}]}]}]"))
	f.Add([]byte("a: &x [*x]"))
	f.Add([]byte("switches: [{settings: {active_slots: 99999999999999999999}}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig(b, "fuzz.yaml")
		if err != nil {
			return
		}
		if cfg.Validate() != nil {
			return
		}
		// A config that validates must encode: entities are built from it without error.
		s := testSchema(t)
		for _, sw := range cfg.Switches {
			if _, err := s.DesiredState(cfg, sw.Name); err != nil {
				t.Fatalf("valid config does not encode: %v", err)
			}
		}
	})
}

// A token may travel without TLS only to a switch on this machine.
func TestLocalTarget(t *testing.T) {
	for target, local := range map[string]bool{
		"127.0.0.1:9559": true, "[::1]:9559": true, "localhost:9559": true, "dns:///localhost:1": true,
		"unix:///run/sw.sock": true, "10.0.0.9:9559": false, "tor1:9559": false, "0.0.0.0:9559": false, "nonsense": false,
	} {
		if got := isLocalTarget(target); got != local {
			t.Errorf("isLocalTarget(%q) = %v, want %v", target, got, local)
		}
	}
}
