package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/netpack"
)

// TestMain lets the tests run the real command (main, with its exit codes) by re-executing the
// test binary with NETPACK_TEST_MAIN=1.
func TestMain(m *testing.M) {
	if os.Getenv("NETPACK_TEST_MAIN") == "1" {
		os.Args = append([]string{"netpack"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runCmd runs the command with args and returns its stdout, stderr and exit code.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "NETPACK_TEST_MAIN=1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// Jobs 10,000 s apart never overlap, so each runs alone and takes exactly its trace duration
// (iterations are the duration at the job's isolated rate): every policy's mean JCT is the mean
// duration, (600 + 1200 + 1800 + 3600 + 2400) / 5 = 1920 s.
const tinyTrace = `job_id,submit_time_s,num_gpus,duration_s
a,0,1,600
b,10000,2,1200
c,20000,4,1800
d,30000,8,3600
e,40000,16,2400
`

func writeTrace(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommandSim(t *testing.T) {
	tr := writeTrace(t, tinyTrace)
	out, errOut, code := runCmd(t, "sim", "--trace", tr, "--policy", "netpack", "--uniform", "2x2x4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "netpack") || !strings.Contains(out, "mean JCT h") {
		t.Fatalf("summary lacks the policy or its header:\n%s", out)
	}
	csv := filepath.Join(t.TempDir(), "jobs.csv")
	if _, errOut, code := runCmd(t, "sim", "--trace", tr, "--policy", "gandiva", "--uniform", "2x2x4", "--jobs-csv", csv); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 6 {
		t.Fatalf("jobs CSV has %d lines, want a header and 5 jobs:\n%s", n, b)
	}
}

func TestCommandCompareJSON(t *testing.T) {
	tr := writeTrace(t, tinyTrace)
	for _, slots := range []string{"esa", "atp"} {
		out, errOut, code := runCmd(t, "compare", "--trace", tr, "--uniform", "2x2x4", "--slots", slots, "--warmup", "0", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got struct {
			Jobs    int                `json:"jobs"`
			Slots   string             `json:"slots"`
			Sharing string             `json:"ina_sharing"`
			MeanJCT map[string]float64 `json:"mean_jct_s"`
			Ratio   map[string]float64 `json:"ratio_to_ref"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("--json output is not JSON: %v\n%s", err, out)
		}
		wantSharing := map[string]string{"esa": "priority", "atp": "fair"}[slots]
		if got.Jobs != 5 || got.Slots != slots || got.Sharing != wantSharing {
			t.Fatalf("jobs %d slots %q sharing %q; want 5, %q, %q", got.Jobs, got.Slots, got.Sharing, slots, wantSharing)
		}
		if n := len(netpack.PolicyNames()); len(got.MeanJCT) != n {
			t.Fatalf("mean_jct_s has %d policies, want all %d: %v", len(got.MeanJCT), n, got.MeanJCT)
		}
		for p, m := range got.MeanJCT {
			if math.Abs(m-1920) > 0.01*1920 {
				t.Errorf("%s: mean JCT %v s, want 1920 s (jobs alone run their trace duration)", p, m)
			}
		}
		if r := got.Ratio["netpack"]; r != 1 {
			t.Errorf("netpack's ratio to itself is %v", r)
		}
	}
}

func TestCommandCompareTable(t *testing.T) {
	tr := writeTrace(t, tinyTrace)
	out, errOut, code := runCmd(t, "compare", "--trace", tr, "--uniform", "2x2x4", "--policies", "netpack,gpu-balance")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "gpu-balance") || !strings.Contains(out, "vs netpack") || strings.Contains(out, "tetris") {
		t.Fatalf("table lists the wrong policies:\n%s", out)
	}
}

func TestCommandMalformedTrace(t *testing.T) {
	bad := writeTrace(t, "job_id,submit_time_s,num_gpus,duration_s\na,0,1,600\nb,soon,1,600\nc,5,1,60\n")
	for _, cmd := range []string{"sim", "compare"} {
		_, errOut, code := runCmd(t, cmd, "--trace", bad, "--uniform", "2x2x4")
		if code != 1 || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, "submit_time_s") {
			t.Errorf("%s on a malformed row: exit %d, stderr %q; want exit 1 naming line 3 and its field", cmd, code, errOut)
		}
	}
	out, errOut, code := runCmd(t, "compare", "--trace", bad, "--uniform", "2x2x4", "--skip-bad", "--json")
	if code != 0 || !strings.Contains(errOut, "skipped 1 malformed") || !strings.Contains(out, `"jobs": 2`) {
		t.Fatalf("--skip-bad: exit %d, stderr %q, stdout %s", code, errOut, out)
	}
}

func TestCommandBadUsage(t *testing.T) {
	tr := writeTrace(t, tinyTrace)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"sim", "--trace", tr, "--policy", "nope"}, 1, "nope"},
		{[]string{"sim", "--trace", tr, "--slots", "lru"}, 1, "slot policy"},
		{[]string{"compare", "--trace", tr, "--ina-memory-bytes", "-5"}, 1, "ina-memory-bytes"},
		{[]string{"compare"}, 1, "-trace FILE or -synthetic N is required"},
		{[]string{"sim", "--trace", filepath.Join(t.TempDir(), "missing.csv")}, 1, "missing.csv"},
		{[]string{"sim", "-h"}, 0, "-policy"},
		{[]string{"bench", "-h"}, 0, "-machines"},
		{[]string{"place", "--help"}, 0, "-jobs"},
		{[]string{"bench", "--frobnicate"}, 2, "-machines"},
		{[]string{"compare", "--trace", tr, "extra"}, 2, "unexpected arguments"},
		{[]string{}, 2, "usage: netpack"},
	} {
		_, errOut, code := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("netpack %v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errOut, c.code, c.says)
		}
		if strings.Contains(errOut, "help requested") {
			t.Errorf("netpack %v: stderr has the flag package's noise %q", c.args, errOut)
		}
	}
	for _, h := range []string{"--help", "-h", "help"} {
		out, errOut, code := runCmd(t, h)
		if code != 0 || !strings.Contains(out, "commands:") || errOut != "" {
			t.Errorf("netpack %s: exit %d, stdout %q, stderr %q; want the command list on stdout, exit 0", h, code, out, errOut)
		}
	}
}
