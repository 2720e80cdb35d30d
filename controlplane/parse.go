package controlplane

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Pos records where a config element and each of its keys appear in the YAML source, so that
// validation errors can name the line.
type Pos struct {
	Line int
	keys map[string]int
}

// At returns the line of key field, or of the element when the key is absent.
func (p Pos) At(field string) int {
	if l, ok := p.keys[field]; ok {
		return l
	}
	return p.Line
}

// Duration is a time.Duration written as "5s" in YAML and JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// ParseConfig parses YAML config text; name is used in error messages. It does not validate.
func ParseConfig(text []byte, name string) (cfg *Config, err error) {
	// yaml.v3 has panicked on hostile input in the past; a config error must never crash the caller.
	defer func() {
		if r := recover(); r != nil {
			cfg, err = nil, fmt.Errorf("%s: malformed YAML (%v)", name, r)
		}
	}()
	var root yaml.Node
	if err := yaml.Unmarshal(text, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cfg = &Config{file: name}
	if len(root.Content) == 0 {
		return cfg, nil
	}
	if err := decodeNode(root.Content[0], reflect.ValueOf(cfg).Elem(), ""); err != nil {
		return nil, fmt.Errorf("%s:%w", name, err)
	}
	return cfg, nil
}

var (
	posType      = reflect.TypeOf(Pos{})
	durationType = reflect.TypeOf(Duration(0))
)

// decodeNode decodes n into v, rejecting unknown keys and recording positions in Pos fields.
// It walks structs itself (rather than using yaml's decoder) so every element gets its lines.
func decodeNode(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return fmt.Errorf("%d: %s: bad alias", n.Line, path)
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decodeNode(n, v.Elem(), path)
	case reflect.Struct:
		if v.Type() == posType {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			if path == "" {
				path = "top level"
			}
			return fmt.Errorf("%d: %s: expected a mapping", n.Line, path)
		}
		return decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%d: %s: expected a list", n.Line, path)
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := decodeNode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%d: %s: expected a single value", n.Line, path)
	}
	if v.Type() == durationType {
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("%d: %s: bad duration %q", n.Line, path, n.Value)
		}
		v.SetInt(int64(d))
		return nil
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return fmt.Errorf("%d: %s: %s", n.Line, path, msg)
	}
	return nil
}

func decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	t := v.Type()
	fields := map[string]int{}
	posField := -1
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == posType {
			posField = i
			continue
		}
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" && f.IsExported() {
			fields[tag] = i
		}
	}
	pos := Pos{Line: n.Line, keys: map[string]int{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := joinPath(path, k.Value)
		fi, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("%d: %s: unknown field (known: %s)", k.Line, fp, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		if _, dup := pos.keys[k.Value]; dup {
			return fmt.Errorf("%d: %s: field given twice", k.Line, fp)
		}
		pos.keys[k.Value] = k.Line
		if err := decodeNode(val, v.Field(fi), fp); err != nil {
			return err
		}
	}
	if posField >= 0 {
		v.Field(posField).Set(reflect.ValueOf(pos))
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// ParseJob parses one job (as in the config's jobs list) from YAML or JSON text.
func ParseJob(text []byte, name string) (job *JobConfig, err error) {
	defer func() {
		if r := recover(); r != nil {
			job, err = nil, fmt.Errorf("%s: malformed YAML (%v)", name, r)
		}
	}()
	var root yaml.Node
	if err := yaml.Unmarshal(text, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	job = &JobConfig{}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	if err := decodeNode(root.Content[0], reflect.ValueOf(job).Elem(), "job"); err != nil {
		return nil, fmt.Errorf("%s:%w", name, err)
	}
	return job, nil
}
