package devconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// manifest is the part of bf-p4c's manifest.json (written to the -o directory) that locates the
// outputs of one program.
type manifest struct {
	Target              string `json:"target"` // tofino, tofino2, ...
	CompilationSucceeds bool   `json:"compilation_succeeded"`
	Programs            []struct {
		ProgramName string `json:"program_name"` // ina.p4
		Pipes       []struct {
			PipeName string `json:"pipe_name"` // pipe
			Files    struct {
				Context struct {
					Path string `json:"path"` // pipe/context.json
				} `json:"context"`
			} `json:"files"`
		} `json:"pipes"`
	} `json:"programs"`
}

// BfrtNames are the names bf-p4c's BF Runtime schema is looked for under in its output directory:
// bf-rt.json is what p4c-gen-bfrt-conf (and so bf_switchd's .conf) expects, bfrt.json what
// --bf-rt-schema is often given.
var BfrtNames = []string{"bf-rt.json", "bfrt.json"}

// LoadBfP4c reads the output directory of one `bf-p4c -o dir` compile of a single-pipeline program:
// manifest.json names the program, the pipeline and its context.json; the binary is
// <pipeline>/<target>.bin beside it, and the BF Runtime schema one of BfrtNames in dir.
func LoadBfP4c(dir string) (*Tofino, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("bf-p4c output: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("bf-p4c output: manifest.json: %w", err)
	}
	if !m.CompilationSucceeds {
		return nil, errors.New("bf-p4c output: manifest.json says the compilation failed")
	}
	if len(m.Programs) != 1 || len(m.Programs[0].Pipes) != 1 {
		return nil, fmt.Errorf("bf-p4c output: want one program with one pipeline, manifest.json has %d programs", len(m.Programs))
	}
	prog, pipe := m.Programs[0], m.Programs[0].Pipes[0]
	if m.Target == "" || pipe.PipeName == "" || pipe.Files.Context.Path == "" {
		return nil, errors.New("bf-p4c output: manifest.json lacks the target, the pipeline name or its context.json")
	}
	ctx := filepath.Join(dir, pipe.Files.Context.Path)
	f := Files{
		PipelineName: strings.TrimSuffix(prog.ProgramName, ".p4"),
		Profile:      pipe.PipeName,
		ContextJSON:  ctx,
		Binary:       filepath.Join(filepath.Dir(ctx), m.Target+".bin"),
	}
	for _, n := range BfrtNames {
		if p := filepath.Join(dir, n); fileExists(p) {
			f.BfrtJSON = p
			break
		}
	}
	t, err := LoadTofino(f)
	if err != nil {
		return nil, err
	}
	if !json.Valid(t.ContextJSON) || (t.BfrtJSON != nil && !json.Valid(t.BfrtJSON)) {
		return nil, errors.New("bf-p4c output: context.json or the BF Runtime schema is not JSON")
	}
	return t, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
