//go:build cgo

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestPython runs the Python package's tests (python/tests, pytest) against the library built
// from this package: the bridge end to end, four ranks on an in-process PS (a few, as root, in
// network namespaces of their own). The
// interpreter is $INAPACK_PYTHON, else build/pyenv's (scripts/pyenv.sh installs numpy and pytest
// and torch there); tests that need what the interpreter lacks (torch) are reported as skipped
// subtests, which .ci/run fails on.
func TestPython(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	py := os.Getenv("INAPACK_PYTHON")
	if py == "" {
		py = filepath.Join(root, "build", "pyenv", "bin", "python")
	}
	if out, err := exec.Command(py, "-c", "import numpy, pytest").CombinedOutput(); err != nil {
		t.Skipf("SKIP: Python tests: %s cannot import numpy and pytest (run scripts/pyenv.sh, or set INAPACK_PYTHON): %s",
			py, lastLine(out))
	}
	lib := filepath.Join(t.TempDir(), "libinapack.so")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", lib, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, out)
	}
	cmd := exec.Command(py, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", filepath.Join(root, "python", "tests"))
	cmd.Env = append(os.Environ(), "INAPACK_LIB="+lib, "PYTHONPATH="+filepath.Join(root, "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	t.Log(lastLine(out))
	// "SKIPPED [1] tests/test_ddp.py:12: SKIP: torch is not installed ..." -> a skipped subtest.
	skipped := regexp.MustCompile(`^SKIPPED \[\d+\] ([^:]+):\d+: (.*)$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := skipped.FindStringSubmatch(sc.Text()); m != nil {
			t.Run(filepath.Base(m[1]), func(t *testing.T) { t.Skip(m[2]) })
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
