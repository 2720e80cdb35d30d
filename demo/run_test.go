package demo

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/internal/procs"
)

// fakeInactlEnv makes this test binary stand in for inactl: it fails that many times with
// "address already in use" (counted in a file beside its config), then listens on the config's
// api_address until it is killed.
const fakeInactlEnv = "INA_DEMO_FAKE_INACTL_BUSY"

func TestMain(m *testing.M) {
	if busy := os.Getenv(fakeInactlEnv); busy != "" {
		os.Exit(fakeInactl(busy))
	}
	os.Exit(m.Run())
}

func fakeInactl(busy string) int {
	cfg := os.Args[len(os.Args)-1] // inactl run --config PATH
	b, err := os.ReadFile(cfg)
	m := regexp.MustCompile(`api_address: (\S+)`).FindSubmatch(b)
	if err != nil || m == nil {
		fmt.Fprintln(os.Stderr, "fake inactl: no api_address in", cfg, err)
		return 2
	}
	count := filepath.Join(filepath.Dir(cfg), "attempts")
	old, _ := os.ReadFile(count)
	n, _ := strconv.Atoi(strings.TrimSpace(string(old)))
	_ = os.WriteFile(count, []byte(strconv.Itoa(n+1)), 0o644)
	if want, _ := strconv.Atoi(busy); n < want {
		fmt.Fprintf(os.Stderr, "inactl: listen tcp %s: bind: address already in use\n", m[1])
		return 1
	}
	l, err := net.Listen("tcp", string(m[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake inactl:", err)
		return 1
	}
	defer l.Close()
	time.Sleep(time.Minute)
	return 0
}

// A controller whose port was taken before it bound it is started again on new ports, up to
// bindAttempts times; any other failure, or the last, is the error.
func TestControllerGetsNewPortsWhenOneWasTaken(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		busy     int
		wantErr  string
		attempts int
	}{{0, "", 1}, {bindAttempts - 1, "", bindAttempts}, {bindAttempts, "address already in use", bindAttempts}} {
		dir := t.TempDir()
		if err := os.Symlink(self, filepath.Join(dir, "inactl")); err != nil {
			t.Fatal(err)
		}
		t.Setenv(fakeInactlEnv, strconv.Itoa(c.busy))
		d := &demo{bin: dir, dir: dir, procs: demoProcs{dir: dir}}
		for _, a := range []*string{&d.apiAddr, &d.metricsAddr} {
			if *a, err = procs.FreeAddr(); err != nil {
				t.Fatal(err)
			}
		}
		first := d.apiAddr
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := d.listeningController(ctx)
		cancel()
		d.procs.stopAll()
		n, _ := os.ReadFile(filepath.Join(dir, "attempts"))
		switch {
		case c.wantErr == "" && err != nil, c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("busy %d times: error %v, want %q", c.busy, err, c.wantErr)
		case string(n) != strconv.Itoa(c.attempts):
			t.Errorf("busy %d times: %s starts, want %d", c.busy, n, c.attempts)
		case c.busy > 0 && d.apiAddr == first:
			t.Errorf("busy %d times: still on the taken port %s", c.busy, first)
		}
	}
}
