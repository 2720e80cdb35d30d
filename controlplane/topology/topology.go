// Package topology derives the controller config from a p4lang/tutorials-style topology.json.
package topology

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/inapack/inapack/controlplane"
)

// Topology is topology.json: the tutorials' hosts, switches and links, plus an "ina" section.
type Topology struct {
	Hosts    map[string]Host   `json:"hosts"`
	Switches map[string]Switch `json:"switches"`
	Links    []Link            `json:"links"`
	INA      INA               `json:"ina"`
}

// Host is a Mininet host: address with prefix length, MAC, and commands run after start-up. GPUs
// is how many GPUs the cluster layer may place on it (0: not a machine for training jobs).
type Host struct {
	IP       string   `json:"ip"`
	MAC      string   `json:"mac"`
	Commands []string `json:"commands,omitempty"`
	GPUs     int      `json:"gpus,omitempty"`
}

// Switch is a P4 switch. DeviceID defaults to 1.
type Switch struct {
	DeviceID uint64 `json:"device_id,omitempty"`
}

// Link joins two endpoints: a host name, or "<switch>-p<port>". Latency and Mbps are the
// tutorials' optional third and fourth elements; Mbps 0 means no rate limit. Runners emulate Mbps
// with the switches' egress rate on both ends (refswitch --rate), and the cluster layer reads it
// as the link's capacity.
type Link struct {
	A, B    string
	Latency string
	Mbps    float64
}

// UnmarshalJSON accepts the tutorials' form ["h1", "s1-p1"] or ["h1", "s1-p1", "0ms", 100]
// (latency, then bandwidth in Mbit/s).
func (l *Link) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("link %s: want [endpoint, endpoint, ...]", b)
	}
	if len(raw) < 2 || len(raw) > 4 {
		return fmt.Errorf("link %s: want [endpoint, endpoint] and optionally latency and bandwidth (Mbit/s)", b)
	}
	if err := json.Unmarshal(raw[0], &l.A); err != nil {
		return fmt.Errorf("link %s: endpoint 1 is not a string", b)
	}
	if err := json.Unmarshal(raw[1], &l.B); err != nil {
		return fmt.Errorf("link %s: endpoint 2 is not a string", b)
	}
	if len(raw) > 2 {
		// The tutorials write latency as "2ms" or as a number of milliseconds.
		var ms float64
		if json.Unmarshal(raw[2], &ms) == nil {
			l.Latency = strconv.FormatFloat(ms, 'f', -1, 64) + "ms"
		} else if err := json.Unmarshal(raw[2], &l.Latency); err != nil {
			return fmt.Errorf("link %s: latency is neither a string nor a number of ms", b)
		}
	}
	if len(raw) > 3 {
		if err := json.Unmarshal(raw[3], &l.Mbps); err != nil || l.Mbps < 0 || math.IsInf(l.Mbps, 0) {
			return fmt.Errorf("link %s: bandwidth must be a number of Mbit/s >= 0", b)
		}
	}
	return nil
}

// MarshalJSON writes the tutorials' form, the optional elements only when set.
func (l Link) MarshalJSON() ([]byte, error) {
	v := []any{l.A, l.B}
	if l.Latency != "" || l.Mbps > 0 {
		v = append(v, cmp.Or(l.Latency, "0ms"))
	}
	if l.Mbps > 0 {
		v = append(v, l.Mbps)
	}
	return json.Marshal(v)
}

// INA holds the jobs and the switch settings applied to every switch.
type INA struct {
	Settings *controlplane.Settings `json:"settings,omitempty"`
	Jobs     []Job                  `json:"jobs"`
}

// Job is one training job: its PS host, its worker hosts in rank order, its priority cap.
type Job struct {
	ID          int      `json:"id"`
	PS          string   `json:"ps"`
	Workers     []string `json:"workers"`
	PriorityCap *int     `json:"priority_cap,omitempty"`
	INA         *bool    `json:"ina,omitempty"`
}

// Endpoint is how the controller reaches one switch; the runner that starts the switches knows it
// and writes it as JSON (inactl derive --endpoints).
type Endpoint struct {
	Address       string `json:"address"`
	Target        string `json:"target"` // bmv2 or ref
	DeviceConfig  string `json:"device_config"`
	ThriftAddress string `json:"thrift_address"`
}

// Load reads and checks topology.json.
func Load(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse checks the contents of a topology.json; path names it in errors.
func Parse(path string, b []byte) (*Topology, error) {
	var t Topology
	if err := json.Unmarshal(b, &t); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line := 1 + bytes.Count(b[:syn.Offset], []byte("\n"))
			col := int(syn.Offset) - bytes.LastIndexByte(b[:syn.Offset], '\n') - 1
			return nil, fmt.Errorf("%s:%d:%d: %w", path, line, col, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := t.graph(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

// hop is one side of a link as seen from a node: the neighbour, and the switch port on our side
// (0 for a host, which has one interface).
type hop struct {
	to   string
	port int
}

type graph map[string][]hop

// ParseEndpoint splits "s1-p3" into ("s1", 3); a host name has port 0.
func (t *Topology) ParseEndpoint(e string) (string, int, error) {
	if _, ok := t.Hosts[e]; ok {
		return e, 0, nil
	}
	i := strings.LastIndex(e, "-p")
	if i < 0 {
		return "", 0, fmt.Errorf("endpoint %q is neither a host nor <switch>-p<port>", e)
	}
	name := e[:i]
	port, err := strconv.Atoi(e[i+2:])
	if err != nil || port < 0 || port > 511 {
		return "", 0, fmt.Errorf("endpoint %q: port must be 0..511", e)
	}
	if _, ok := t.Switches[name]; !ok {
		return "", 0, fmt.Errorf("endpoint %q: no switch %q", e, name)
	}
	return name, port, nil
}

func (t *Topology) graph() (graph, error) {
	g := graph{}
	used := map[string]bool{}
	for _, l := range t.Links {
		a, pa, err := t.ParseEndpoint(l.A)
		if err != nil {
			return nil, err
		}
		b, pb, err := t.ParseEndpoint(l.B)
		if err != nil {
			return nil, err
		}
		for _, e := range []struct {
			n string
			p int
		}{{a, pa}, {b, pb}} {
			key := e.n + "/" + strconv.Itoa(e.p)
			if used[key] {
				if _, host := t.Hosts[e.n]; host {
					return nil, fmt.Errorf("host %s has more than one link", e.n)
				}
				return nil, fmt.Errorf("port %d of %s is linked twice", e.p, e.n)
			}
			used[key] = true
		}
		g[a] = append(g[a], hop{to: b, port: pa})
		g[b] = append(g[b], hop{to: a, port: pb})
	}
	for name, h := range t.Hosts {
		if _, err := netip.ParsePrefix(h.IP); err != nil {
			return nil, fmt.Errorf("host %s: ip %q: want address/prefix, e.g. 10.0.1.1/24", name, h.IP)
		}
		if len(g[name]) == 0 {
			return nil, fmt.Errorf("host %s has no link", name)
		}
	}
	return g, nil
}

// tree is a shortest-path tree rooted at one host: for every switch, the port towards the root,
// and the child hops below it.
type tree struct {
	up       map[string]int    // switch -> port towards the root
	parent   map[string]string // node -> parent node
	children map[string][]hop  // switch -> hops to children
}

func (g graph) bfs(root string) tree {
	t := tree{up: map[string]int{}, parent: map[string]string{}, children: map[string][]hop{}}
	seen := map[string]bool{root: true}
	queue := []string{root}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, h := range g[n] {
			if seen[h.to] {
				continue
			}
			seen[h.to] = true
			t.parent[h.to] = n
			// The port on h.to's side that leads back to n.
			for _, back := range g[h.to] {
				if back.to == n {
					t.up[h.to] = back.port
					break
				}
			}
			t.children[n] = append(t.children[n], h)
			queue = append(queue, h.to)
		}
	}
	return t
}
