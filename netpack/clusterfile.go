package netpack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// clusterFile is the on-disk cluster description (YAML or JSON; JSON is valid YAML).
type clusterFile struct {
	Name     string     `yaml:"name"`
	CoreGbps float64    `yaml:"core_gbps"`
	Racks    []rackFile `yaml:"racks"`
}

// rackFile describes one rack, or Repeat identical racks.
type rackFile struct {
	Name           string  `yaml:"name"`
	Repeat         int     `yaml:"repeat"` // default 1
	Machines       int     `yaml:"machines"`
	GPUsPerMachine int     `yaml:"gpus_per_machine"`
	NICGbps        float64 `yaml:"nic_gbps"`
	UplinkGbps     float64 `yaml:"uplink_gbps"`
	INAMemoryBytes float64 `yaml:"ina_memory_bytes"`
	RTTMicros      float64 `yaml:"rtt_us"`
}

// maxMachines bounds what a file may ask for, so a hostile file cannot exhaust memory.
const maxMachines = 1 << 20

// LoadCluster reads a cluster file (YAML or JSON).
func LoadCluster(path string) (*Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	c, err := ParseCluster(data)
	if err != nil {
		return nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	return c, nil
}

// ParseCluster parses and validates a cluster description. Unknown fields are errors (a typo in
// a capacity name must not silently become a default).
func ParseCluster(data []byte) (*Cluster, error) {
	var f clusterFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("malformed cluster description: %w", err)
	}
	if len(f.Racks) == 0 {
		return nil, fmt.Errorf("cluster description has no racks")
	}
	c := &Cluster{Name: f.Name, CoreGbps: f.CoreGbps}
	if c.Name == "" {
		c.Name = "cluster"
	}
	total := 0
	for i, rf := range f.Racks {
		rep := rf.Repeat
		if rep == 0 {
			rep = 1
		}
		if rep < 0 || rep > maxMachines || rf.Machines <= 0 || rf.Machines > maxMachines {
			return nil, fmt.Errorf("racks[%d]: repeat must be >= 1 and machines >= 1 (got repeat %d, machines %d)", i, rf.Repeat, rf.Machines)
		}
		if total += rep * rf.Machines; total > maxMachines {
			return nil, fmt.Errorf("racks[%d]: cluster exceeds %d machines", i, maxMachines)
		}
		rtt := rf.RTTMicros * 1e-6
		if rf.INAMemoryBytes > 0 && rf.RTTMicros == 0 {
			rtt = DefaultRTTSec
		}
		for k := 0; k < rep; k++ {
			name := rf.Name
			if name == "" || rep > 1 {
				name = fmt.Sprintf("%s%d", nonEmpty(rf.Name, "r"), len(c.Racks))
			}
			c.Racks = append(c.Racks, Rack{Name: name, First: MachineID(len(c.Machines)), Count: rf.Machines,
				UplinkGbps: rf.UplinkGbps, INAMemoryBytes: rf.INAMemoryBytes, RTTSec: rtt})
			for m := 0; m < rf.Machines; m++ {
				c.Machines = append(c.Machines, Machine{Rack: len(c.Racks) - 1, GPUs: rf.GPUsPerMachine, NICGbps: rf.NICGbps})
			}
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// MarshalJSON writes the cluster in the file format ParseCluster reads (one entry per rack).
func (c *Cluster) MarshalJSON() ([]byte, error) {
	f := clusterFileJSON{Name: c.Name, CoreGbps: c.CoreGbps}
	for _, r := range c.Racks {
		m := c.Machines[r.First]
		f.Racks = append(f.Racks, rackFileJSON{Name: r.Name, Machines: r.Count, GPUsPerMachine: m.GPUs, NICGbps: m.NICGbps,
			UplinkGbps: r.UplinkGbps, INAMemoryBytes: r.INAMemoryBytes, RTTMicros: r.RTTSec * 1e6})
	}
	return json.Marshal(f)
}

type clusterFileJSON struct {
	Name     string         `json:"name"`
	CoreGbps float64        `json:"core_gbps"`
	Racks    []rackFileJSON `json:"racks"`
}

type rackFileJSON struct {
	Name           string  `json:"name"`
	Machines       int     `json:"machines"`
	GPUsPerMachine int     `json:"gpus_per_machine"`
	NICGbps        float64 `json:"nic_gbps"`
	UplinkGbps     float64 `json:"uplink_gbps"`
	INAMemoryBytes float64 `json:"ina_memory_bytes"`
	RTTMicros      float64 `json:"rtt_us"`
}
