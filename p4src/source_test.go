package p4src

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readSources concatenates the P4 files of one build.
func readSources(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".p4") {
			return err
		}
		src, err := os.ReadFile(path)
		b.Write(src)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	actionDeclRE = regexp.MustCompile(`(?m)^\s*action\s+(\w+)\s*\(([^)]*)\)`)
	tableDeclRE  = regexp.MustCompile(`(?m)^\s*table\s+(\w+)\s*\{`)
	spaceRE      = regexp.MustCompile(`\s+`)
)

// TestBothBuildsDeclareProtocolTables checks, without a compiler, that the v1model and the TNA
// sources declare every table of docs/protocol.md and its actions with the documented parameters
// (PortId_t is 9 bits on both targets).
func TestBothBuildsDeclareProtocolTables(t *testing.T) {
	want := docActions(t)
	for _, build := range []string{"v1model", "tna"} {
		src := readSources(t, build)
		tables := map[string]bool{}
		for _, m := range tableDeclRE.FindAllStringSubmatch(src, -1) {
			tables[m[1]] = true
		}
		for _, name := range []string{"ipv4_lpm", "ina_job", "ina_ps", "ina_settings", "ina_unicast"} {
			if !tables[name] {
				t.Errorf("%s: table %s not declared", build, name)
			}
		}
		actions := map[string]string{}
		for _, m := range actionDeclRE.FindAllStringSubmatch(src, -1) {
			params := spaceRE.ReplaceAllString(strings.TrimSpace(m[2]), " ")
			actions[m[1]] = strings.ReplaceAll(params, "PortId_t", "bit<9>")
		}
		for name, params := range want {
			got, ok := actions[name]
			if !ok {
				t.Errorf("%s: action %s not declared", build, name)
				continue
			}
			if w := strings.Join(params, ", "); got != w {
				t.Errorf("%s: action %s(%s), docs/protocol.md has (%s)", build, name, got, w)
			}
		}
		for _, reg := range []string{"slot_seq", "slot_bitmap", "slot_count", "slot_state"} {
			if !regexp.MustCompile(`[Rr]egister<[^;]*\)\s*` + reg + `;`).MatchString(src) {
				t.Errorf("%s: register %s not declared", build, reg)
			}
		}
		for _, ctr := range []string{"ina_events", "ina_job_events"} {
			if !regexp.MustCompile(`[Cc]ounter[^;]*\)\s*` + ctr + `;`).MatchString(src) {
				t.Errorf("%s: counter %s not declared", build, ctr)
			}
		}
	}
}
