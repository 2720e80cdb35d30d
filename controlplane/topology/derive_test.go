package topology

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/inapack/inapack/controlplane"
)

func endpointsFor(t *Topology) map[string]Endpoint {
	eps := map[string]Endpoint{}
	port := 50001
	for name := range t.Switches {
		eps[name] = Endpoint{Address: "127.0.0.1:" + strconv.Itoa(port), Target: controlplane.TargetRef}
		port++
	}
	return eps
}

func derive(t *testing.T, name string) *controlplane.Config {
	t.Helper()
	topo, err := Load(filepath.Join("..", "..", "bmv2", "topologies", name, "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := topo.Derive(endpointsFor(topo))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("derived config does not validate: %v", err)
	}
	return cfg
}

func part(t *testing.T, cfg *controlplane.Config, job int, sw string) controlplane.JobSwitch {
	t.Helper()
	for _, p := range cfg.Job(job).Switches {
		if p.Switch == sw {
			return p
		}
	}
	t.Fatalf("job %d has no entries on %s", job, sw)
	return controlplane.JobSwitch{}
}

func TestOneRack(t *testing.T) {
	cfg := derive(t, "one-rack")
	p := part(t, cfg, 1, "s1")
	want := []controlplane.Member{{Port: 1, WorkerBit: 0}, {Port: 2, WorkerBit: 1}, {Port: 3, WorkerBit: 2}, {Port: 4, WorkerBit: 3}}
	if !reflect.DeepEqual(p.Members, want) {
		t.Errorf("members = %+v, want %+v", p.Members, want)
	}
	if p.PS.Port != 5 || p.PS.IP != "10.0.0.100" || p.PS.MAC != "08:00:00:00:00:64" {
		t.Errorf("ps = %+v", p.PS)
	}
	if p.Result.Port != 5 || !reflect.DeepEqual(p.Result.Ports, []int{1, 2, 3, 4}) {
		t.Errorf("result = %+v", p.Result)
	}
	if len(p.TransitPorts) != 0 {
		t.Errorf("transit ports on a single switch: %v", p.TransitPorts)
	}
	if n := len(cfg.Switch("s1").Routes); n != 5 {
		t.Errorf("%d routes, want one per host (5)", n)
	}
}

func TestTwoRacks(t *testing.T) {
	cfg := derive(t, "two-racks")
	tor1 := part(t, cfg, 1, "tor1")
	if len(tor1.Members) != 2 || tor1.Members[0].WorkerBit != 0 || tor1.Members[1].WorkerBit != 1 {
		t.Errorf("tor1 members = %+v", tor1.Members)
	}
	if tor1.PS.Port != 4 || tor1.Result.Port != 4 || !reflect.DeepEqual(tor1.Result.Ports, []int{1, 2}) {
		t.Errorf("tor1 ps/result = %+v %+v", tor1.PS, tor1.Result)
	}
	spine := part(t, cfg, 1, "spine")
	if len(spine.Members) != 0 || !reflect.DeepEqual(spine.TransitPorts, []int{1}) || spine.PS.Port != 2 {
		t.Errorf("spine = %+v", spine)
	}
	if !reflect.DeepEqual(spine.Result.Ports, []int{1}) || spine.Result.Port != 2 {
		t.Errorf("spine result = %+v", spine.Result)
	}
	tor2 := part(t, cfg, 1, "tor2")
	if len(tor2.Members) != 2 || tor2.Members[0].WorkerBit != 2 || tor2.Members[1].WorkerBit != 3 {
		t.Errorf("tor2 members = %+v", tor2.Members)
	}
	if !reflect.DeepEqual(tor2.TransitPorts, []int{4}) || tor2.PS.Port != 5 {
		t.Errorf("tor2 transit/ps = %v %+v", tor2.TransitPorts, tor2.PS)
	}
	if !reflect.DeepEqual(tor2.Result.Ports, []int{1, 2, 4}) || tor2.Result.Port != 5 {
		t.Errorf("tor2 result = %+v", tor2.Result)
	}
	// ina_unicast: the branch toward each worker behind another switch; tor1's workers are its
	// members (their own ports), and on the way down from the PS each hop points toward tor1.
	away := []controlplane.UnicastPort{{WorkerBit: 0, Port: 4}, {WorkerBit: 1, Port: 4}}
	if len(tor1.Result.Unicast) != 0 || !reflect.DeepEqual(tor2.Result.Unicast, away) {
		t.Errorf("unicast: tor1 %+v, tor2 %+v, want none and %+v", tor1.Result.Unicast, tor2.Result.Unicast, away)
	}
	if want := []controlplane.UnicastPort{{WorkerBit: 0, Port: 1}, {WorkerBit: 1, Port: 1}}; !reflect.DeepEqual(spine.Result.Unicast, want) {
		t.Errorf("spine unicast = %+v, want %+v", spine.Result.Unicast, want)
	}
}

// A host listed twice runs two workers of the job behind its one ToR port: members 0 and 1 there,
// each with its rank's bit; the port is in the result group once; the spine still sees one transit
// port from that rack.
func TestTwoWorkersPerHost(t *testing.T) {
	topo, err := Load(filepath.Join("..", "..", "bmv2", "topologies", "two-racks", "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	jc, err := topo.DeriveJob(Job{ID: 3, PS: "ps1", Workers: []string{"h1", "h3", "h1", "h3", "h2"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &controlplane.Config{Jobs: []controlplane.JobConfig{*jc}}
	for i, sw := range []string{"tor1", "tor2", "spine"} {
		cfg.Switches = append(cfg.Switches, controlplane.SwitchConfig{Name: sw, Address: "127.0.0.1:1", DeviceID: uint64(i + 1), Target: controlplane.TargetRef})
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("derived config does not validate: %v", err)
	}
	tor1 := part(t, cfg, 3, "tor1")
	want := []controlplane.Member{{Port: 1, WorkerBit: 0}, {Port: 1, Member: 1, WorkerBit: 2}, {Port: 2, WorkerBit: 4}}
	if !reflect.DeepEqual(tor1.Members, want) || tor1.LocalFanIn() != 3 {
		t.Errorf("tor1 members = %+v, want %+v", tor1.Members, want)
	}
	if !reflect.DeepEqual(tor1.Result.Ports, []int{1, 2}) {
		t.Errorf("tor1 result = %+v", tor1.Result)
	}
	tor2 := part(t, cfg, 3, "tor2")
	want = []controlplane.Member{{Port: 1, WorkerBit: 1}, {Port: 1, Member: 1, WorkerBit: 3}}
	if !reflect.DeepEqual(tor2.Members, want) || !reflect.DeepEqual(tor2.Result.Ports, []int{1, 4}) {
		t.Errorf("tor2 = %+v", tor2)
	}
	spine := part(t, cfg, 3, "spine")
	if !reflect.DeepEqual(spine.TransitPorts, []int{1}) {
		t.Errorf("spine transit = %v", spine.TransitPorts)
	}
	// Every worker of tor1, the second of a host too, has its branch on the way down.
	if want := []controlplane.UnicastPort{{WorkerBit: 0, Port: 1}, {WorkerBit: 2, Port: 1}, {WorkerBit: 4, Port: 1}}; !reflect.DeepEqual(spine.Result.Unicast, want) {
		t.Errorf("spine unicast = %+v, want %+v", spine.Result.Unicast, want)
	}
	if got := MemberIndices([]string{"a", "b", "a", "a"}); !reflect.DeepEqual(got, []int{0, 0, 1, 2}) {
		t.Errorf("MemberIndices = %v", got)
	}
	many := make([]string, 17)
	for i := range many {
		many[i] = "h1"
	}
	if _, err := topo.DeriveJob(Job{ID: 4, PS: "ps1", Workers: many}); err == nil || !strings.Contains(err.Error(), "more than 16") {
		t.Errorf("17 workers on one host: %v", err)
	}
}

func TestTwoJobs(t *testing.T) {
	cfg := derive(t, "two-jobs")
	if *cfg.Job(1).PriorityCap >= *cfg.Job(2).PriorityCap {
		t.Errorf("sample should give job 2 the higher priority cap")
	}
	if s := cfg.Switch("s1").Settings; s == nil || s.ActiveSlots == nil || *s.ActiveSlots != 16 {
		t.Errorf("settings not carried over: %+v", s)
	}
	if p := part(t, cfg, 2, "s1"); p.Members[0].WorkerBit != 0 || p.Members[0].Port != 3 {
		t.Errorf("job 2 ranks restart at 0 on its own hosts: %+v", p.Members)
	}
}

func TestBadTopologies(t *testing.T) {
	cases := map[string]string{
		"unknown endpoint": `{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"}},"switches":{"s1":{}},"links":[["h1","s9-p1"]]}`,
		"port reused":      `{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"},"h2":{"ip":"10.0.0.2/24","mac":"08:00:00:00:00:02"}},"switches":{"s1":{}},"links":[["h1","s1-p1"],["h2","s1-p1"]]}`,
		"bad ip":           `{"hosts":{"h1":{"ip":"10.0.0.1","mac":"08:00:00:00:00:01"}},"switches":{"s1":{}},"links":[["h1","s1-p1"]]}`,
		"isolated host":    `{"hosts":{"h1":{"ip":"10.0.0.1/24","mac":"08:00:00:00:00:01"}},"switches":{"s1":{}},"links":[]}`,
		"short link":       `{"hosts":{},"switches":{"s1":{}},"links":[["s1-p1"]]}`,
	}
	for name, text := range cases {
		p := filepath.Join(t.TempDir(), "topology.json")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
	topo, err := Load(filepath.Join("..", "..", "bmv2", "topologies", "one-rack", "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	topo.INA.Jobs = append(topo.INA.Jobs, Job{ID: 2, PS: "h1", Workers: []string{"h1", "h2"}})
	if _, err := topo.Derive(endpointsFor(topo)); err == nil || !strings.Contains(err.Error(), "both PS and worker") {
		t.Errorf("PS as worker: err = %v", err)
	}
}
