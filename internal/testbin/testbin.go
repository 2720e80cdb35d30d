// Package testbin builds the repository's commands for tests that run them as processes: from
// this tree (never a stale build/bin), once per test binary, into a directory Main removes.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dirs  = map[string]string{} // packages built -> their directory
	fails = map[string]error{}
)

// Build builds the packages (module paths from the repository root, e.g. "./cmd/refswitch" or
// "./cmd/...") and returns the directory of their binaries; a failed build fails the test.
func Build(t testing.TB, pkgs ...string) string {
	t.Helper()
	key := strings.Join(pkgs, " ")
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := dirs[key]; ok {
		return dir
	}
	if err, ok := fails[key]; ok {
		t.Fatal(err)
	}
	dir, err := build(pkgs)
	if err != nil {
		fails[key] = err
		t.Fatal(err)
	}
	dirs[key] = dir
	return dir
}

func build(pkgs []string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "ina-testbin-")
	if err != nil {
		return "", err
	}
	// The go of the toolchain running the tests: a root shell's PATH may have none.
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir, nil
}

// moduleRoot is the nearest directory at or above the test's working directory with a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Main runs the tests, then removes what Build made; call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for _, dir := range dirs {
		os.RemoveAll(dir)
	}
	mu.Unlock()
	os.Exit(code)
}
