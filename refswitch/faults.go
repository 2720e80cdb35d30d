package refswitch

import (
	"fmt"
	"math/rand/v2"
)

// FaultConfig injects faults on egress (tc netem does not work on these machines). Rates are
// probabilities per packet, in [0, 1]. Each port draws from its own generator seeded by (Seed,
// port), so a given seed and a given packet sequence on a port always get the same faults.
type FaultConfig struct {
	Loss, Dup, Reorder float64
	Seed               uint64
}

func (c FaultConfig) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"loss", c.Loss}, {"dup", c.Dup}, {"reorder", c.Reorder}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("--%s rate %v outside [0, 1]", r.name, r.v)
		}
	}
	return nil
}

func (c FaultConfig) active() bool { return c.Loss > 0 || c.Dup > 0 || c.Reorder > 0 }

// injector applies the faults of one port.
type injector struct {
	cfg  FaultConfig
	rng  *rand.Rand
	held []byte // a packet delayed behind the next one
	st   *portCounters
}

func newInjector(cfg FaultConfig, port uint16, st *portCounters) *injector {
	return &injector{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(port))), st: st}
}

// apply returns the packets to send now, in order (out[:n]). Every packet draws the same three
// numbers, so one fault never shifts the decisions taken for later packets.
func (in *injector) apply(f []byte) (out [3][]byte, n int) {
	lose, dup, reorder := in.rng.Float64() < in.cfg.Loss, in.rng.Float64() < in.cfg.Dup, in.rng.Float64() < in.cfg.Reorder
	if lose {
		in.st.FaultLost.Add(1)
		return out, 0
	}
	out[0], n = f, 1
	if dup {
		in.st.FaultDuplicated.Add(1)
		out[1], n = f, 2
	}
	if in.held != nil {
		out[n] = in.held
		in.held = nil
		return out, n + 1
	}
	if reorder {
		in.st.FaultReordered.Add(1)
		in.held = out[n-1]
		n--
	}
	return out, n
}

// flush releases a held packet when no later packet came to overtake it.
func (in *injector) flush() []byte {
	f := in.held
	in.held = nil
	return f
}
