// Package devconfig builds the target-specific p4_device_config blob of a P4Runtime pipeline push.
//
// BMv2 (simple_switch_grpc) takes the JSON that p4c-bm2-ss writes, unchanged. Tofino takes one of
// two packings of the bf-p4c outputs (a pipeline name, bf-rt.json, context.json, tofino.bin):
//
//   - Stratum form (stratum_bfrt, and stratum_bf's preferred form): a serialized
//     stratum.hal.barefoot.BfPipelineConfig protobuf {p4_name = 1; bfruntime_info = 2;
//     repeated Profile profiles = 3} with Profile {profile_name = 1; context = 2; binary = 3;
//     repeated uint32 pipe_scope = 4} (stratum/hal/lib/barefoot/bf.proto).
//   - PI form (bf_switchd with the PI/P4Runtime agent, and stratum_bf's legacy form): the
//     concatenation of three length-prefixed fields, each length a little-endian uint32:
//     pipeline name, tofino.bin, context.json. bf-rt.json is not carried.
package devconfig

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
)

// Tofino is the bf-p4c output of one program with a single pipeline profile.
type Tofino struct {
	PipelineName string   // the P4 program (p4_name); also the profile name if Profile is empty
	Profile      string   // pipeline profile name, usually "pipe"
	PipeScope    []uint32 // hardware pipes the profile applies to; empty means all
	BfrtJSON     []byte   // bf-rt.json
	ContextJSON  []byte   // <profile>/context.json
	Binary       []byte   // <profile>/tofino.bin (or tofino2.bin)
}

// Files names the compiler outputs to read with LoadTofino.
type Files struct {
	PipelineName, Profile, BfrtJSON, ContextJSON, Binary string
}

// LoadTofino reads the compiler outputs named in f.
func LoadTofino(f Files) (*Tofino, error) {
	t := &Tofino{PipelineName: f.PipelineName, Profile: f.Profile}
	for _, x := range []struct {
		path string
		dst  *[]byte
	}{{f.BfrtJSON, &t.BfrtJSON}, {f.ContextJSON, &t.ContextJSON}, {f.Binary, &t.Binary}} {
		if x.path == "" {
			continue
		}
		b, err := os.ReadFile(x.path)
		if err != nil {
			return nil, fmt.Errorf("tofino device config: %w", err)
		}
		*x.dst = b
	}
	return t, nil
}

func (t *Tofino) check(needBfrt bool) error {
	var missing []error
	if t.PipelineName == "" {
		missing = append(missing, errors.New("pipeline name"))
	}
	if len(t.ContextJSON) == 0 {
		missing = append(missing, errors.New("context.json"))
	}
	if len(t.Binary) == 0 {
		missing = append(missing, errors.New("tofino.bin"))
	}
	if needBfrt && len(t.BfrtJSON) == 0 {
		missing = append(missing, errors.New("bf-rt.json"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("tofino device config: missing %w", errors.Join(missing...))
	}
	return nil
}

func (t *Tofino) profile() string {
	if t.Profile != "" {
		return t.Profile
	}
	return t.PipelineName
}

// Stratum packs t as a serialized BfPipelineConfig.
func (t *Tofino) Stratum() ([]byte, error) {
	if err := t.check(true); err != nil {
		return nil, err
	}
	var prof []byte
	prof = protowire.AppendTag(prof, 1, protowire.BytesType)
	prof = protowire.AppendString(prof, t.profile())
	prof = protowire.AppendTag(prof, 2, protowire.BytesType)
	prof = protowire.AppendBytes(prof, t.ContextJSON)
	prof = protowire.AppendTag(prof, 3, protowire.BytesType)
	prof = protowire.AppendBytes(prof, t.Binary)
	if len(t.PipeScope) > 0 {
		var packed []byte
		for _, p := range t.PipeScope {
			packed = protowire.AppendVarint(packed, uint64(p))
		}
		prof = protowire.AppendTag(prof, 4, protowire.BytesType)
		prof = protowire.AppendBytes(prof, packed)
	}
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendString(out, t.PipelineName)
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	out = protowire.AppendBytes(out, t.BfrtJSON)
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	out = protowire.AppendBytes(out, prof)
	return out, nil
}

// PI packs t in the bf_switchd PI form: name, tofino.bin, context.json, each after its LE32 length.
func (t *Tofino) PI() ([]byte, error) {
	if err := t.check(false); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 12+len(t.PipelineName)+len(t.Binary)+len(t.ContextJSON))
	for _, part := range [][]byte{[]byte(t.PipelineName), t.Binary, t.ContextJSON} {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(part)))
		out = append(out, part...)
	}
	return out, nil
}

// ParsePI splits a PI-form device config back into its three parts.
func ParsePI(b []byte) (*Tofino, error) {
	var parts [3][]byte
	for i := range parts {
		if len(b) < 4 {
			return nil, fmt.Errorf("PI device config: truncated before field %d", i)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("PI device config: field %d claims %d bytes, %d left", i, n, len(b))
		}
		parts[i], b = b[:n], b[n:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("PI device config: %d trailing bytes", len(b))
	}
	return &Tofino{PipelineName: string(parts[0]), Binary: parts[1], ContextJSON: parts[2]}, nil
}
