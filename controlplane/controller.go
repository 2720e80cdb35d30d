package controlplane

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/inapack/inapack/controlplane/devconfig"
)

// Options tune a Controller.
type Options struct {
	// DefaultP4Info is the P4Info text used by switches whose config names no p4info file.
	DefaultP4Info []byte
	Logger        *slog.Logger
}

// Controller keeps a set of switches in the state a Config describes.
type Controller struct {
	log  *slog.Logger
	opts Options

	mu       sync.Mutex // guards cfg and every switchState's fields; never held during I/O
	jobMu    sync.Mutex // serializes job changes so each is validated against the one before
	cfg      *Config
	switches map[string]*switchState
	order    []string
}

// switchState is what the controller knows about one switch.
type switchState struct {
	io sync.Mutex // serializes I/O with the switch (connect, reconcile, job writes, polls)

	sc       *SwitchConfig
	schema   *Schema
	devCfg   []byte
	cookie   uint64
	conn     *Conn
	slots    SlotAccess
	slotsErr error

	// pendingClears are jobs removed while the switch was unreachable; their slots are cleared on
	// the next connect.
	pendingClears map[int]bool

	lastErr    string
	lastDiff   string
	connects   int
	pushes     int
	reconciles int
	written    int
	snapshot   *Snapshot
}

// New prepares a controller: it loads every switch's P4Info and device config and checks the P4Info
// against the tables the controller needs. It does not contact any switch.
func New(cfg *Config, opts Options) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if loaded, err := loadState(cfg); err != nil {
		return nil, err
	} else if loaded {
		opts.Logger.Info("jobs restored from the state file", "file", cfg.Controller.StateFile, "jobs", len(cfg.Jobs))
	}
	c := &Controller{log: opts.Logger, opts: opts, cfg: cfg, switches: map[string]*switchState{}}
	for i := range cfg.Switches {
		sc := &cfg.Switches[i]
		st, err := c.loadSwitch(sc)
		if err != nil {
			return nil, fmt.Errorf("switch %s: %w", sc.Name, err)
		}
		c.switches[sc.Name] = st
		c.order = append(c.order, sc.Name)
	}
	// Entities are built once here so a config that passes validation but cannot be encoded
	// (which would be a bug) fails before anything is written.
	for _, name := range c.order {
		if _, err := c.switches[name].schema.DesiredState(cfg, name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Controller) loadSwitch(sc *SwitchConfig) (*switchState, error) {
	text := c.opts.DefaultP4Info
	if sc.P4Info != "" {
		b, err := os.ReadFile(sc.P4Info)
		if err != nil {
			return nil, fmt.Errorf("p4info: %w", err)
		}
		text = b
	}
	if len(text) == 0 {
		return nil, errors.New("no p4info file given and no embedded default")
	}
	schema, err := SchemaFromText(text)
	if err != nil {
		return nil, err
	}
	dev, err := loadDeviceConfig(sc)
	if err != nil {
		return nil, err
	}
	bin, err := schema.Marshal()
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write(bin)
	h.Write(dev)
	return &switchState{sc: sc, schema: schema, devCfg: dev, cookie: h.Sum64(), pendingClears: map[int]bool{}}, nil
}

func loadDeviceConfig(sc *SwitchConfig) ([]byte, error) {
	if sc.Tofino != nil {
		var t *devconfig.Tofino
		var err error
		if sc.Tofino.Dir != "" {
			t, err = devconfig.LoadBfP4c(sc.Tofino.Dir)
		} else {
			t, err = devconfig.LoadTofino(devconfig.Files{PipelineName: sc.Tofino.PipelineName, Profile: "pipe",
				BfrtJSON: sc.Tofino.BfrtJSON, ContextJSON: sc.Tofino.ContextJSON, Binary: sc.Tofino.Binary})
		}
		if err != nil {
			return nil, err
		}
		if sc.Tofino.Form == "pi" {
			return t.PI()
		}
		return t.Stratum()
	}
	if sc.DeviceConfig == "" {
		return nil, nil
	}
	b, err := os.ReadFile(sc.DeviceConfig)
	if err != nil {
		return nil, fmt.Errorf("device config: %w", err)
	}
	return b, nil
}

func (c *Controller) dialTimeout() time.Duration {
	if d := time.Duration(c.cfg.Controller.DialTimeout); d > 0 {
		return d
	}
	return 5 * time.Second
}

func (c *Controller) batch() int {
	if c.cfg.Controller.BatchSize > 0 {
		return c.cfg.Controller.BatchSize
	}
	return DefaultBatchSize
}

// Switches lists the configured switch names in config order.
func (c *Controller) Switches() []string { return append([]string(nil), c.order...) }

// Close ends every switch session.
func (c *Controller) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.switches {
		if st.conn != nil {
			st.conn.Close()
			st.conn = nil
		}
	}
}
