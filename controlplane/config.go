package controlplane

import (
	"fmt"
	"os"
	"slices"
)

// Config is the controller's declarative desired state (see README.md for the reference).
type Config struct {
	Controller ControllerConfig `yaml:"controller" json:"controller"`
	Switches   []SwitchConfig   `yaml:"switches" json:"switches"`
	Jobs       []JobConfig      `yaml:"jobs" json:"jobs"`
	Pos        Pos              `yaml:"-" json:"-"`

	file string
}

// ControllerConfig holds the controller's own listeners and loop periods.
type ControllerConfig struct {
	APIAddress     string     `yaml:"api_address" json:"api_address"`
	MetricsAddress string     `yaml:"metrics_address" json:"metrics_address"`
	TokenFile      string     `yaml:"token_file" json:"token_file"`
	StateFile      string     `yaml:"state_file" json:"state_file"` // job list kept across restarts
	TLS            *TLSConfig `yaml:"tls" json:"tls,omitempty"`
	PollInterval   Duration   `yaml:"poll_interval" json:"poll_interval"`
	ReconcileEvery Duration   `yaml:"reconcile_interval" json:"reconcile_interval"`
	DialTimeout    Duration   `yaml:"dial_timeout" json:"dial_timeout"`
	BatchSize      int        `yaml:"batch_size" json:"batch_size"`
	MaxBackoff     Duration   `yaml:"max_backoff" json:"max_backoff"`
	Pos            Pos        `yaml:"-" json:"-"`
}

// SwitchConfig describes one switch and its job-independent state.
type SwitchConfig struct {
	Name            string           `yaml:"name" json:"name"`
	Address         string           `yaml:"address" json:"address"`
	DeviceID        uint64           `yaml:"device_id" json:"device_id"`
	ElectionID      uint64           `yaml:"election_id" json:"election_id"`
	Target          string           `yaml:"target" json:"target"`
	P4Info          string           `yaml:"p4info" json:"p4info,omitempty"`
	DeviceConfig    string           `yaml:"device_config" json:"device_config,omitempty"`
	Tofino          *TofinoConfig    `yaml:"tofino" json:"tofino,omitempty"`
	ThriftAddress   string           `yaml:"thrift_address" json:"thrift_address,omitempty"`
	TLS             *TLSConfig       `yaml:"tls" json:"tls,omitempty"`
	TokenFile       string           `yaml:"token_file" json:"token_file,omitempty"` // bearer token sent on every P4Runtime call
	Settings        *Settings        `yaml:"settings" json:"settings,omitempty"`
	Routes          []Route          `yaml:"routes" json:"routes,omitempty"`
	MulticastGroups []MulticastGroup `yaml:"multicast_groups" json:"multicast_groups,omitempty"`
	Pos             Pos              `yaml:"-" json:"-"`
}

// Targets a switch may be.
const (
	TargetBMv2   = "bmv2"
	TargetRef    = "ref"
	TargetTofino = "tofino"
)

// TofinoConfig names the compiler outputs a Tofino device config is built from (see devconfig):
// Dir, bf-p4c's output directory (make p4-tna: build/tna), or each file.
type TofinoConfig struct {
	Form         string `yaml:"form" json:"form"` // stratum (default) or pi
	Dir          string `yaml:"dir" json:"dir,omitempty"`
	PipelineName string `yaml:"pipeline_name" json:"pipeline_name"`
	BfrtJSON     string `yaml:"bfrt_json" json:"bfrt_json"`
	ContextJSON  string `yaml:"context_json" json:"context_json"`
	Binary       string `yaml:"binary" json:"binary"`
	Pos          Pos    `yaml:"-" json:"-"`
}

// TLSConfig configures TLS towards a switch, or for the job API when used as a server.
type TLSConfig struct {
	CA                 string `yaml:"ca" json:"ca,omitempty"`
	Cert               string `yaml:"cert" json:"cert,omitempty"`
	Key                string `yaml:"key" json:"key,omitempty"`
	ServerName         string `yaml:"server_name" json:"server_name,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
	Pos                Pos    `yaml:"-" json:"-"`
}

// Settings is the ina_settings default action.
type Settings struct {
	Preempt      *bool  `yaml:"preempt" json:"preempt,omitempty"`
	Release      string `yaml:"release" json:"release,omitempty"` // esa (default) or atp
	ECNThreshold *int   `yaml:"ecn_threshold" json:"ecn_threshold,omitempty"`
	ActiveSlots  *int   `yaml:"active_slots" json:"active_slots,omitempty"`
	Pos          Pos    `yaml:"-" json:"-"`
}

// Route is an ipv4_lpm entry.
type Route struct {
	Prefix string `yaml:"prefix" json:"prefix"`
	Port   int    `yaml:"port" json:"port"`
	MAC    string `yaml:"mac" json:"mac"`
	Pos    Pos    `yaml:"-" json:"-"`
}

// MulticastGroup is a replication group not owned by a job.
type MulticastGroup struct {
	ID    int   `yaml:"id" json:"id"`
	Ports []int `yaml:"ports" json:"ports"`
	Pos   Pos   `yaml:"-" json:"-"`
}

// JobConfig is one job's entries on every switch it spans.
type JobConfig struct {
	ID int `yaml:"id" json:"id"`
	// Owner names who added the job (the Kubernetes operator writes its name): a client that
	// cleans up jobs it lost track of removes only its own. The controller keeps it and nothing
	// else reads it.
	Owner       string      `yaml:"owner" json:"owner,omitempty"`
	PriorityCap *int        `yaml:"priority_cap" json:"priority_cap,omitempty"`
	INA         *bool       `yaml:"ina" json:"ina,omitempty"`
	Switches    []JobSwitch `yaml:"switches" json:"switches"`
	Pos         Pos         `yaml:"-" json:"-"`
}

// JobSwitch is a job's part on one switch.
type JobSwitch struct {
	Switch       string        `yaml:"switch" json:"switch"`
	PS           PSConfig      `yaml:"ps" json:"ps"`
	Members      []Member      `yaml:"members" json:"members,omitempty"`
	FanIn        *int          `yaml:"fan_in" json:"fan_in,omitempty"`
	Result       *ResultConfig `yaml:"result" json:"result,omitempty"`
	TransitPorts []int         `yaml:"transit_ports" json:"transit_ports,omitempty"`
	Pos          Pos           `yaml:"-" json:"-"`
}

// PSConfig is the ina_ps entry: where this switch sends the job's sums.
type PSConfig struct {
	Port int    `yaml:"port" json:"port"`
	MAC  string `yaml:"mac" json:"mac"`
	IP   string `yaml:"ip" json:"ip"`
	Pos  Pos    `yaml:"-" json:"-"`
}

// Member is a worker of the job on this switch (an ina_worker entry): its port and, for several
// workers of the job behind one port, the member index its packets carry (0..15, default 0).
type Member struct {
	Port      int `yaml:"port" json:"port"`
	Member    int `yaml:"member" json:"member,omitempty"`
	WorkerBit int `yaml:"worker_bit" json:"worker_bit"`
	Pos       Pos `yaml:"-" json:"-"`
}

// ResultConfig is the ina_result entry and the job's multicast group on this switch.
type ResultConfig struct {
	Port           int   `yaml:"port" json:"port"`
	MulticastGroup int   `yaml:"multicast_group" json:"multicast_group"`
	Ports          []int `yaml:"ports" json:"ports,omitempty"` // replicas; default: the member ports
	// Unicast names, for each of the job's workers behind another switch below this one, the
	// replica port toward it (its ina_unicast entry; a member's is its own port). Optional: a
	// worker without one gets its unicast results by the group.
	Unicast []UnicastPort `yaml:"unicast" json:"unicast,omitempty"`
	Pos     Pos           `yaml:"-" json:"-"`
}

// UnicastPort is the port of the group's branch toward the worker of WorkerBit (an ina_unicast
// entry).
type UnicastPort struct {
	WorkerBit int `yaml:"worker_bit" json:"worker_bit"`
	Port      int `yaml:"port" json:"port"`
	Pos       Pos `yaml:"-" json:"-"`
}

// Defaults applied when a field is absent.
const (
	DefaultPriorityCap = 255
	DefaultAPIAddress  = "127.0.0.1:9560"
	DefaultMetrics     = "127.0.0.1:9561"
	DefaultBatchSize   = 512
)

// LoadConfig reads, parses and validates the config file at path.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(b, path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Switch returns the switch named name, or nil.
func (c *Config) Switch(name string) *SwitchConfig {
	for i := range c.Switches {
		if c.Switches[i].Name == name {
			return &c.Switches[i]
		}
	}
	return nil
}

// Job returns the job with id, or nil.
func (c *Config) Job(id int) *JobConfig {
	for i := range c.Jobs {
		if c.Jobs[i].ID == id {
			return &c.Jobs[i]
		}
	}
	return nil
}

// Cap is the job's priority cap with its default.
func (j *JobConfig) Cap() int {
	if j.PriorityCap == nil {
		return DefaultPriorityCap
	}
	return *j.PriorityCap
}

// INAEnabled is the job's INA switch with its default (on).
func (j *JobConfig) INAEnabled() bool { return j.INA == nil || *j.INA }

// LocalFanIn is the job's fan-in at this switch: the given value or the number of members.
func (js *JobSwitch) LocalFanIn() int {
	if js.FanIn == nil {
		return len(js.Members)
	}
	return *js.FanIn
}

// ReplicaPorts are the result multicast group's ports: by default each member port once, however
// many members share it (every worker behind a port reads the one copy).
func (r *ResultConfig) ReplicaPorts(js *JobSwitch) []int {
	if len(r.Ports) > 0 {
		return r.Ports
	}
	out := make([]int, 0, len(js.Members))
	for _, m := range js.Members {
		if !slices.Contains(out, m.Port) {
			out = append(out, m.Port)
		}
	}
	return out
}
