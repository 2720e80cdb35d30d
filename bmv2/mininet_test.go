package bmv2

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/internal/testbin"
)

// bin is the directory of the commands, built once for the whole package.
func bin(t *testing.T) string { return testbin.Build(t, "./cmd/...") }

func TestMain(m *testing.M) { testbin.Main(m) }

func python(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("SKIP: /usr/bin/python3 is missing")
	}
}

// runPy runs bmv2/run.py from the repository root with the test's commands and state directory.
func runPy(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{"bmv2/run.py", "--state-dir", t.TempDir()}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "INA_BIN="+bin(t))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// User errors end in one message naming the problem, before anything is built, never a traceback.
func TestRunUserErrors(t *testing.T) {
	python(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ topology, want string }{
		{"no-such-topology", "the shipped topologies are: one-rack, two-jobs, two-racks"},
		{write("syntax.json", "{\"hosts\": {},\n  \"switches\": {\"s1\": {},}\n}"), "syntax.json:2:"},
		{write("array.json", "[]"), "cannot unmarshal array"},
		{write("noswitch.json", "{}"), "no switches"},
		{write("badps.json", `{"hosts": {"h1": {"ip": "10.0.0.1/24", "mac": "08:00:00:00:00:01"}}, "switches": {"s1": {}},
			"links": [["h1", "s1-p1"]], "ina": {"jobs": [{"id": 1, "ps": "h9", "workers": ["h1"]}]}}`), `ps "h9" is not a host`},
		{write("nomac.json", `{"hosts": {"h1": {"ip": "10.0.0.1/24"}}, "switches": {"s1": {}}, "links": [["h1", "s1-p1"]]}`), "not a MAC address"},
		{write("badport.json", `{"hosts": {"h1": {"ip": "10.0.0.1/24", "mac": "08:00:00:00:00:01"}}, "switches": {"s1": {}},
			"links": [["h1", "s1-px"]]}`), "port must be 0..511"},
	} {
		out, err := runPy(t, "--topology", c.topology)
		if err == nil || !strings.Contains(out, c.want) || strings.Contains(out, "Traceback") || strings.Contains(out, "*** Creating network") {
			t.Errorf("--topology %s: %v\n%s\nwant a failure saying %q before the network is built, and no traceback", c.topology, err, out, c.want)
		}
	}
	out, err := runPy(t, "--topology", "one-rack", "--job", "9")
	if err == nil || !strings.Contains(out, "no job 9") || !strings.Contains(out, "job 1: PS ps1, workers h1 h2 h3 h4") {
		t.Errorf("--job 9: %v\n%s", err, out)
	}
}

// TestMininetTopologies runs one all-reduce per job through each shipped topology, on the reference
// switch and on BMv2.
func TestMininetTopologies(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short: Mininet end-to-end runs are long")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIP: Mininet needs root")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import mininet").Run(); err != nil {
		t.Skip("SKIP: Mininet is not installed for /usr/bin/python3 (apt-get install mininet)")
	}
	for _, sw := range []string{"ref", "bmv2"} {
		t.Run(sw, func(t *testing.T) {
			if sw == "bmv2" {
				if _, err := exec.LookPath("simple_switch_grpc"); err != nil {
					t.Skip("SKIP: simple_switch_grpc is not on PATH (github.com/p4lang/behavioral-model)")
				}
				if _, err := os.Stat("../build/ina.json"); err != nil {
					t.Skip("SKIP: build/ina.json is missing: make p4 (needs p4c-bm2-ss)")
				}
			}
			for _, topo := range []string{"one-rack", "two-racks", "two-jobs"} {
				t.Run(topo, func(t *testing.T) {
					out, err := runPy(t, "--test", "--switch", sw, "--topology", topo)
					if err != nil || !strings.Contains(out, ": PASS") {
						t.Fatalf("run.py --test: %v\n%s", err, out)
					}
				})
			}
		})
	}
}
