package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch/refswitchtest"
)

func TestValidateExamples(t *testing.T) {
	files, _ := filepath.Glob("../../controlplane/examples/*.yaml")
	for _, f := range files {
		if strings.Contains(f, "tofino") || strings.Contains(f, "two-racks") {
			continue // they name compiler outputs that are not in the tree
		}
		if err := cmdValidate([]string{"--config", f}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := cmdValidate([]string{"--config", "../../controlplane/examples/tofino.yaml"}); err == nil ||
		!strings.Contains(err.Error(), "build/tna") {
		t.Errorf("missing Tofino files not reported: %v", err)
	}
}

func TestPrintStatus(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, []cp.SwitchStatus{{
		Name: "tor1", Address: "127.0.0.1:1", Target: "ref", Connected: true, PipelinePushes: 1,
		Snapshot: &cp.Snapshot{
			Time:      time.Unix(0, 0),
			Events:    map[string]uint64{"claimed": 3, "drop_bad_port": 2, "drop_version": 1},
			JobEvents: map[int]map[string]uint64{5: {"claimed": 3, "completed": 1, "preempted": 4}},
			SlotsHeld: map[int]int{5: 2},
		},
	}, {Name: "tor2", Address: "x:2", LastError: "unreachable"}})
	out := b.String()
	for _, want := range []string{"switch tor1 (127.0.0.1:1, ref): connected", "preempted", "switch tor2", "DOWN", "last error: unreachable", "no counters read yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	var jobLine, allLine string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "5" {
			jobLine = l
		}
		if len(f) > 0 && f[0] == "all" {
			allLine = l
		}
	}
	if f := strings.Fields(jobLine); len(f) != 14 || f[1] != "3" || f[3] != "1" || f[7] != "4" || f[13] != "2" {
		t.Errorf("job row %q: want claimed 3, completed 1, preempted 4, slots 2", jobLine)
	}
	if f := strings.Fields(allLine); len(f) < 13 || f[12] != "3" {
		t.Errorf("all row %q: want drops 3", allLine)
	}

	// A job holding no slot: the controller's empty map is omitted from the JSON, so it arrives nil.
	// That is 0; "?" is for registers that could not be read.
	for _, c := range []struct {
		slotsErr, want string
	}{{"", "0"}, {"read failed", "?"}} {
		b.Reset()
		printStatus(&b, []cp.SwitchStatus{{Name: "tor1", Connected: true, Snapshot: &cp.Snapshot{
			JobEvents: map[int]map[string]uint64{5: {"claimed": 1}}, SlotsErr: c.slotsErr,
		}}})
		rows := 0
		for _, l := range strings.Split(b.String(), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "5" {
				if rows++; f[len(f)-1] != c.want {
					t.Errorf("slots error %q: job row %q, want slots %s", c.slotsErr, l, c.want)
				}
			}
		}
		if rows != 1 {
			t.Errorf("slots error %q: %d rows for job 5:\n%s", c.slotsErr, rows, b.String())
		}
	}
}

const runConfig = `
controller: {api_address: API, metrics_address: METRICS, poll_interval: 100ms}
switches:
  - {name: s1, address: SWITCH, device_id: 1, target: ref}
jobs:
  - id: 5
    switches:
      - switch: s1
        ps: {port: 3, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        members: [{port: 1, worker_bit: 0}, {port: 2, worker_bit: 1}]
`

const addJob = `
id: 6
priority_cap: 2
switches:
  - switch: s1
    ps: {port: 4, mac: "02:00:00:00:00:04", ip: 10.0.0.4}
    members: [{port: 1, worker_bit: 0}]
`

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestRunCommand builds inactl, runs `inactl run` against an in-process reference switch, and
// drives it with `inactl job`, `inactl status` and a metrics scrape.
func TestRunCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short")
	}
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	sw := ref.Switch

	dir := t.TempDir()
	bin := buildInactl(t)
	apiAddr, metricsAddr := freeAddr(t), freeAddr(t)
	cfg := strings.NewReplacer("API", apiAddr, "METRICS", metricsAddr, "SWITCH", ref.Addr).Replace(runConfig)
	cfgPath, jobPath := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "job.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o644)
	os.WriteFile(jobPath, []byte(addJob), 0o644)

	var logs bytes.Buffer
	run := exec.Command(bin, "run", "--config", cfgPath)
	run.Stderr = &logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		run.Process.Signal(os.Interrupt)
		run.Wait()
		if t.Failed() {
			t.Logf("inactl run:\n%s", logs.String())
		}
	}()
	inactl := func(args ...string) string {
		t.Helper()
		n := 1 // flags follow the (sub)command name
		if args[0] == "job" {
			n = 2
		}
		out, err := exec.Command(bin, append(args[:n:n], append([]string{"--api", apiAddr}, args[n:]...)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("inactl %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	waitFor(t, "inactl run to install job 5", func() bool {
		_, ok := sw.Job(model.JobKey{Job: 5, Port: 2})
		return ok
	})
	// The API may come up just after the first install.
	waitFor(t, "inactl status to answer", func() bool {
		out, err := exec.Command(bin, "status", "--api", apiAddr).CombinedOutput()
		return err == nil && strings.Contains(string(out), "switch s1")
	})
	if out := inactl("job", "add", "--file", jobPath); !strings.Contains(out, "job 6 added") {
		t.Fatalf("job add: %s", out)
	}
	if e, ok := sw.Job(model.JobKey{Job: 6, Port: 1}); !ok || e.PriorityCap != 2 {
		t.Fatalf("job 6 = %+v %v", e, ok)
	}
	inactl("job", "priority", "6", "9")
	inactl("job", "ina", "6", "off")
	if e, _ := sw.Job(model.JobKey{Job: 6, Port: 1}); e.PriorityCap != 9 || e.INAEnabled {
		t.Fatalf("job 6 after priority/ina = %+v", e)
	}
	inactl("job", "remove", "6")
	if _, ok := sw.PS(6); ok {
		t.Fatal("job 6 not removed")
	}
	out, err := exec.Command(bin, "job", "remove", "--api", apiAddr, "6").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "404") {
		t.Fatalf("removing an unknown job: %v: %s", err, out)
	}
	waitFor(t, "the metrics to show job 5's counters", func() bool {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(body), `ina_job_events_packets_total{event="claimed",job="5",switch="s1"}`) &&
			strings.Contains(string(body), `ina_switch_up{switch="s1"} 1`)
	})
	if out := inactl("status"); !strings.Contains(out, "connected") || !strings.Contains(out, "claimed") {
		t.Fatalf("status:\n%s", out)
	}
	if out := inactl("status", "--fresh"); !strings.Contains(out, "connected") || !strings.Contains(out, "claimed") {
		t.Fatalf("status --fresh:\n%s", out)
	}
}

func buildInactl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "inactl")
	if out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// Help exits 0 with the usage on stdout; a usage error exits 2 with the usage on stderr.
func TestHelpAndUsageErrors(t *testing.T) {
	bin := buildInactl(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, 0, "inactl job remove ID"},
		{[]string{"job", "-h"}, 0, "inactl job priority ID CAP"},
		{[]string{"job", "--help"}, 0, "inactl job ina ID on|off"},
		{[]string{"job", "add", "-h"}, 0, "-file"},
		{[]string{"status", "-h"}, 0, "-api"},
		{[]string{"derive", "-h"}, 0, "-check"},
		{[]string{"job"}, 2, "inactl job add --file J"},
		{[]string{"job", "frobnicate"}, 2, `unknown subcommand "frobnicate"`},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"job", "remove"}, 1, "missing job id"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("inactl %v: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}
}

// waitFor polls cond until it holds. The limit only turns a hang into a failure: it is far above
// what any machine needs, so the test does not depend on speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
