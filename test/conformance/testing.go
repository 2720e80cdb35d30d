package conformance

import (
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the test/vectors directory of this source tree.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "vectors")
}

// RunVectors runs every vector in dir against tg, one subtest per file. skip, if not nil, names a
// reason to skip a vector on this target (for example ports it does not have), or returns "".
func RunVectors(t *testing.T, tg Target, dir string, skip func(*Vector) string) {
	t.Helper()
	vs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			if skip != nil {
				if why := skip(v); why != "" {
					t.Skip("SKIP: " + why)
				}
			}
			ms, err := Run(tg, v)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) > 0 {
				t.Errorf("%s: %s\n%s", v.Name, v.Description, Report(ms))
			}
		})
	}
}
