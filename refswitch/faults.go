package refswitch

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/inapack/inapack/p4src/wire"
)

// FaultConfig injects faults on egress (tc netem does not work on these machines). Rates are
// probabilities per packet, in [0, 1]. Each port draws from its own generator seeded by (Seed,
// port), so a given seed and a given packet sequence on a port always get the same faults.
//
// Corrupt is per INA frame: it flips one random bit of one random value lane after the switch
// computed the IPv4 checksum (the UDP checksum is zero), so nothing below the INA layer notices,
// as with a bit flipped in register memory or on a link whose frame check missed it. Its draws
// come from a second generator of the port, so turning it on leaves the loss, duplication and
// reordering of a seed as they were.
type FaultConfig struct {
	Loss, Dup, Reorder, Corrupt float64
	Seed                        uint64
}

func (c FaultConfig) validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"loss", c.Loss}, {"dup", c.Dup}, {"reorder", c.Reorder}, {"corrupt", c.Corrupt}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("--%s rate %v outside [0, 1]", r.name, r.v)
		}
	}
	return nil
}

func (c FaultConfig) active() bool {
	return c.Loss > 0 || c.Dup > 0 || c.Reorder > 0 || c.Corrupt > 0
}

// corruptStream tells the corruption generator's stream apart from the port's other one.
const corruptStream = 1 << 63

// injector applies the faults of one port.
type injector struct {
	cfg     FaultConfig
	rng     *rand.Rand
	corrupt *rand.Rand
	held    []byte // a packet delayed behind the next one
	st      *portCounters
	seen    *FaultConfig // the live rates in force (liveFaults.cur), nil without a fault API
}

func newInjector(cfg FaultConfig, port uint16, st *portCounters) *injector {
	return &injector{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, uint64(port))),
		corrupt: rand.New(rand.NewPCG(cfg.Seed, corruptStream|uint64(port))),
		st:      st,
	}
}

// valuesAt is the offset of an INA frame's first value (Ethernet, IPv4 without options, UDP, header).
const valuesAt = wire.FrameLen - 4*wire.NumValues

// isINA reports whether f is an INA frame with its K values in place.
func isINA(f []byte) bool {
	return len(f) == wire.FrameLen && binary.BigEndian.Uint16(f[12:]) == wire.EtherTypeIPv4 &&
		f[14] == 0x45 && f[23] == wire.ProtoUDP && binary.BigEndian.Uint16(f[36:]) == wire.UDPPort
}

// corruptValue flips one bit of one value of an INA frame with probability Corrupt. Every INA
// frame draws two numbers, whether corrupted or not.
func (in *injector) corruptValue(f []byte) {
	if in.cfg.Corrupt == 0 || !isINA(f) {
		return
	}
	hit, u := in.corrupt.Float64() < in.cfg.Corrupt, in.corrupt.Uint64()
	if !hit {
		return
	}
	lane, bit := int(u%wire.NumValues), uint(u>>32)%32
	b := valuesAt + 4*lane + 3 - int(bit/8) // values are big-endian
	f[b] ^= 1 << (bit % 8)
	in.st.FaultCorrupted.Add(1)
}

// apply returns the packets to send now, in order (out[:n]). Every packet draws the same three
// numbers, so one fault never shifts the decisions taken for later packets. A corrupted packet
// that is also duplicated goes out corrupted twice, as the copy of a bad frame would.
func (in *injector) apply(f []byte) (out [3][]byte, n int) {
	in.corruptValue(f)
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
