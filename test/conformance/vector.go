// Package conformance loads the conformance vectors (test/vectors) and runs them against a Target.
package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/inapack/inapack/p4src/wire"
)

// Vector is one scenario file: a table setup and packet steps (schema: test/vectors/README.md).
type Vector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Setup       Setup  `json:"setup"`
	Steps       []Step `json:"steps"`

	File string `json:"-"` // the path it was loaded from
}

// Setup is the table state a vector starts from, on a switch fresh from a pipeline push.
type Setup struct {
	Settings *SettingsSpec `json:"settings"`
	IPv4     []RouteSpec   `json:"ipv4"`
	PS       []PSSpec      `json:"ps"`
	Jobs     []JobSpec     `json:"jobs"`
	Mcast    []McastSpec   `json:"mcast"`
	Unicast  []UnicastSpec `json:"unicast"`
}

// SettingsSpec is ina_settings; an omitted field keeps the P4 program's initial default.
type SettingsSpec struct {
	Preempt         *bool   `json:"preempt"`
	ReleaseOnResult *bool   `json:"release_on_result"`
	ECNThreshold    *uint32 `json:"ecn_threshold"`
	ActiveSlots     *uint16 `json:"active_slots"`
}

// RouteSpec is an ipv4_lpm entry.
type RouteSpec struct {
	Prefix string `json:"prefix"`
	Port   uint16 `json:"port"`
	DstMAC string `json:"dst_mac"`
}

// PSSpec is an ina_ps entry.
type PSSpec struct {
	Job  uint16 `json:"job"`
	Port uint16 `json:"port"`
	MAC  string `json:"mac"`
	IP   string `json:"ip"`
}

// JobSpec is an ina_job entry. WorkerBit is the worker's rank; the table parameter is 1 << rank.
// INAEnabled defaults to true.
type JobSpec struct {
	Job         uint16 `json:"job"`
	Port        uint16 `json:"port"`
	Member      uint8  `json:"member"` // the INA header's member index behind Port (0..15)
	Role        string `json:"role"`   // worker, result, transit
	WorkerBit   uint8  `json:"worker_bit"`
	FanIn       uint8  `json:"fan_in"`
	PriorityCap uint8  `json:"priority_cap"`
	INAEnabled  *bool  `json:"ina_enabled"`
	McastGroup  uint16 `json:"mcast_group"`
}

// Enabled is INAEnabled with its default applied.
func (j JobSpec) Enabled() bool { return j.INAEnabled == nil || *j.INAEnabled }

// UnicastSpec is an ina_unicast entry: a FLAG_UNICAST result of Job whose bitmap is the bit of
// rank WorkerBit leaves by Port.
type UnicastSpec struct {
	Job       uint16 `json:"job"`
	WorkerBit uint8  `json:"worker_bit"`
	Port      uint16 `json:"port"`
}

// McastSpec is a multicast group.
type McastSpec struct {
	Group uint16   `json:"group"`
	Ports []uint16 `json:"ports"`
}

// Step sends one packet and states what must come out and how the counters move. DeletePS lists
// ina_ps entries removed before the packet is sent (a job removed while it holds a slot).
type Step struct {
	Comment  string       `json:"comment"`
	DeletePS []uint16     `json:"delete_ps"`
	In       PortPacket   `json:"in"`
	Out      []PortPacket `json:"out"`
	Counters Deltas       `json:"counters"`
}

// PortPacket is a packet on a switch port.
type PortPacket struct {
	Port   uint16 `json:"port"`
	Packet Packet `json:"packet"`
}

// Deltas are counter changes in packets, by event name. Byte counters must move by the packets
// times the length of the frame the step sends (docs/protocol.md, "Counting").
type Deltas struct {
	Global map[string]uint64            `json:"global"`
	Jobs   map[string]map[string]uint64 `json:"jobs"`
}

// Load reads and checks one vector file.
func Load(path string) (*Vector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	v := &Vector{File: path}
	if err := d.Decode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := v.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// LoadDir loads every *.json file in dir, sorted by name.
func LoadDir(dir string) ([]*Vector, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no vectors in %s", dir)
	}
	sort.Strings(files)
	var vs []*Vector
	for _, f := range files {
		v, err := Load(f)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// Check verifies what can be verified without a target: the name matches the file, every packet
// builds, every event, flag and role name exists, and every counted job is a number.
func (v *Vector) Check() error {
	if v.File != "" {
		if base := strings.TrimSuffix(filepath.Base(v.File), ".json"); v.Name != base {
			return fmt.Errorf("name %q is not the file name %q", v.Name, base)
		}
	}
	if v.Description == "" || len(v.Steps) == 0 {
		return fmt.Errorf("vector %s needs a description and steps", v.Name)
	}
	for _, j := range v.Setup.Jobs {
		if _, err := ParseRole(j.Role); err != nil {
			return err
		}
	}
	for i, s := range v.Steps {
		if err := s.check(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

func (s *Step) check() error {
	if _, err := s.In.Packet.Build(); err != nil {
		return fmt.Errorf("in: %w", err)
	}
	for i, o := range s.Out {
		if _, err := o.Packet.Build(); err != nil {
			return fmt.Errorf("out %d: %w", i, err)
		}
	}
	if err := checkEvents(s.Counters.Global); err != nil {
		return err
	}
	for j, m := range s.Counters.Jobs {
		if _, err := strconv.ParseUint(j, 10, 16); err != nil {
			return fmt.Errorf("counters: job %q is not a job id", j)
		}
		if err := checkEvents(m); err != nil {
			return err
		}
	}
	return nil
}

func checkEvents(m map[string]uint64) error {
	for name := range m {
		if _, ok := wire.EventByName(name); !ok {
			return fmt.Errorf("counters: unknown event %q", name)
		}
	}
	return nil
}

// Role is the ina_job action a JobSpec names.
type Role uint8

// Roles, in the order of the ina_job actions.
const (
	RoleWorker Role = iota
	RoleResult
	RoleTransit
)

// ParseRole parses a JobSpec role name.
func ParseRole(s string) (Role, error) {
	switch s {
	case "worker":
		return RoleWorker, nil
	case "result":
		return RoleResult, nil
	case "transit":
		return RoleTransit, nil
	}
	return 0, fmt.Errorf("unknown role %q (want worker, result or transit)", s)
}

// Ports lists every port the vector sends to or expects packets on, sorted.
func (v *Vector) Ports() []uint16 {
	seen := map[uint16]bool{}
	for _, s := range v.Steps {
		seen[s.In.Port] = true
		for _, o := range s.Out {
			seen[o.Port] = true
		}
	}
	var ps []uint16
	for p := range seen {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a] < ps[b] })
	return ps
}
