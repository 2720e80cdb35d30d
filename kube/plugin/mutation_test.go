package plugin_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMutationsCaught: the gang tests fail when the gang logic breaks. It runs this test binary
// again with each mutation (export_test.go: Permit always allows, PreEnqueue never holds) and
// the tests that must catch it, and fails if they pass.
func TestMutationsCaught(t *testing.T) {
	if testing.Short() || os.Getenv("INAPACK_MUTATION") != "" {
		t.Skip("runs the live tests again under mutations (not with -short)")
	}
	for mutation, tests := range map[string][]string{
		"permit":     {"TestGangAllOrNone"},
		"preenqueue": {"TestIncompleteGangNeverQueued"},
	} {
		for _, test := range tests {
			cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "INAPACK_MUTATION="+mutation)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--- FAIL: "+test) {
				t.Errorf("mutation %s: %s does not fail (err %v):\n%s", mutation, test, err, tail(string(out), 2000))
				continue
			}
			t.Logf("mutation %s: %s fails, as it must", mutation, test)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
