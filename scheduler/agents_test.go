package scheduler

import (
	"strings"
	"testing"

	"github.com/inapack/inapack/controlplane/topology"
)

// Lines as cmd/ina-worker and cmd/ina-ps print them.
const workerOK = `# ip netns exec e1-h1 build/bin/ina-worker -iface eth0
worker: job=3 rank=1 iter=0 allreduce_ms=30.10 goodput_mbps=17.4 result=exact
worker: job=3 rank=1 iter=1 allreduce_ms=26.52 goodput_mbps=19.8 result=exact
worker-summary: job=3 rank=1 status=ok iterations=2 exact=2 wrong=0 wrong_values=0 goodput_mbps=19.8 wall_s=0.08 sent=512 resent=0 bypass=0 overflow_results=0 ecn=0 window_cuts=0 ignored_results=0
`

const workerTimeout = `worker: job=3 rank=0 iter=0 allreduce_ms=30.10 goodput_mbps=17.4 result=exact
worker-summary: job=3 rank=0 status=error iterations=1 exact=1 wrong=0 wrong_values=0 goodput_mbps=0.0 wall_s=10.2 sent=300 resent=40 bypass=0 overflow_results=0 ecn=0 window_cuts=4 ignored_results=0
worker-error: job=3 rank=0 iteration 1: worker: no progress: job 3 rank 0 waits for seq 300
`

func TestAgentLogParsing(t *testing.T) {
	var a agentLog
	// Fed in pieces that cut lines anywhere.
	for i := 0; i < len(workerOK); i += 37 {
		a.feed([]byte(workerOK[i:min(i+37, len(workerOK))]))
	}
	if a.iters != 2 || a.exact != 2 || a.wrong != 0 || a.lastMbps != 19.8 || a.summary == nil {
		t.Fatalf("parsed %+v", a)
	}
	if err := a.verdict(2); err != nil {
		t.Errorf("verdict = %v", err)
	}
	if err := a.verdict(3); err == nil {
		t.Error("2 iterations done of 3: no error")
	}
	var b agentLog
	b.feed([]byte(workerTimeout))
	err := b.verdict(5)
	if err == nil || !strings.Contains(err.Error(), "no progress") {
		t.Errorf("timed-out worker: verdict %v", err)
	}
	var wrong agentLog
	wrong.feed([]byte("worker: job=1 rank=0 iter=0 allreduce_ms=1 goodput_mbps=1 result=WRONG (3 values, <nil>)\n" +
		"worker-summary: job=1 rank=0 status=wrong iterations=1 exact=0 wrong=1 wrong_values=3 goodput_mbps=1\n"))
	if wrong.wrong != 1 || wrong.verdict(1) == nil {
		t.Errorf("a wrong result passed: %+v", wrong)
	}
	var ps agentLog
	ps.feed([]byte("ina-ps: serving 1 job(s) on eth0,inal3p (mac 08:00:00:00:01:01, ip 10.0.1.1)\n"))
	if !ps.ready {
		t.Error("PS not ready after its serving line")
	}
	var died agentLog
	died.feed([]byte("ina-worker job 3 rank 0: transport: interface \"eth0\": no such network interface\n"))
	if !strings.Contains(died.errLine, "no such network interface") {
		t.Errorf("fatal line not kept: %q", died.errLine)
	}
}

func TestPriorityCapBands(t *testing.T) {
	for _, c := range []struct {
		class int
		prio  uint8
		want  int
	}{{0, 0, 0}, {0, 255, 31}, {1, 0, 32}, {7, 255, 255}, {3, 128, 96 + 16}} {
		if got := PriorityCap(c.class, c.prio); got != c.want {
			t.Errorf("PriorityCap(%d, %d) = %d, want %d", c.class, c.prio, got, c.want)
		}
	}
	// A higher class always beats a lower one.
	if PriorityCap(1, 0) <= PriorityCap(0, 255) {
		t.Error("class 1 does not beat class 0")
	}
}

// The agents' -threads: absent when the agents choose (Config.Threads 0), else the same for the
// PS and every worker, the largest power of two up to Threads dividing the job's window.
func TestAgentThreads(t *testing.T) {
	topo := &topology.Topology{Hosts: map[string]topology.Host{"h1": {IP: "10.0.1.1/24", MAC: "02:00:00:00:01:01"},
		"h2": {IP: "10.0.1.2/24", MAC: "02:00:00:00:01:02"}}}
	j := &Job{ID: 1, Placement: &Placement{PS: "h1", Workers: []PlacedWorker{{Host: "h2"}}, SwitchJob: 3, Window: 12}}
	for _, c := range []struct {
		threads int
		want    string // "" for no flag
	}{{0, ""}, {1, "1"}, {2, "2"}, {4, "4"}, {8, "4"}, {3, "2"}} {
		s := &Service{cfg: Config{Cluster: &Cluster{Topo: topo}, Hosts: map[string]HostAccess{}, Bin: "bin", Threads: c.threads}}
		for _, argv := range [][]string{s.psArgv(j, 3, false), s.workerArgv(j, j.Placement.Workers[0], 3)} {
			got := ""
			for i, a := range argv {
				if a == "-threads" && i+1 < len(argv) {
					got = argv[i+1]
				}
			}
			if got != c.want {
				t.Errorf("Threads %d, window 12: %s has -threads %q, want %q", c.threads, argv[0], got, c.want)
			}
		}
	}
}
