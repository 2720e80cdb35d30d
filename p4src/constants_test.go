package p4src

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inapack/inapack/p4src/wire"
)

var defineRE = regexp.MustCompile(`^#define\s+([A-Z0-9_]+)\s+(0x[0-9A-Fa-f]+|\d+)\b`)

// readDefines returns the numeric #defines of the given P4 files.
func readDefines(t *testing.T, files ...string) map[string]uint64 {
	t.Helper()
	defs := map[string]uint64{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			m := defineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
			if m == nil {
				continue
			}
			v, err := strconv.ParseUint(m[2], 0, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, m[1], err)
			}
			defs[m[1]] = v
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return defs
}

func TestConstantsMatchWire(t *testing.T) {
	defs := readDefines(t, "define.p4", "size.p4")
	want := map[string]uint64{
		"INA_VERSION":         wire.Version,
		"INA_UDP_PORT":        wire.UDPPort,
		"NUM_VALUES":          wire.NumValues,
		"NUM_SLOTS":           wire.NumSlots,
		"MAX_JOBS":            wire.MaxJobs,
		"MAX_WORKERS":         wire.MaxWorkers,
		"NUM_EVENTS":          uint64(wire.NumEvents),
		"INA_HEADER_LEN":      wire.HeaderLen,
		"INA_UDP_LEN":         wire.UDPLen,
		"INA_IPV4_TOTAL_LEN":  wire.IPv4TotalLen,
		"INA_FRAME_LEN":       wire.FrameLen,
		"ETHERTYPE_IPV4":      wire.EtherTypeIPv4,
		"IP_PROTO_UDP":        wire.ProtoUDP,
		"INA_TYPE_DATA":       uint64(wire.TypeData),
		"INA_TYPE_RESULT":     uint64(wire.TypeResult),
		"WORKER_FLAGS":        uint64(wire.WorkerFlags),
		"JOB_EVENTS_SIZE":     uint64(wire.MaxJobs) * uint64(wire.NumEvents),
		"FLAG_RESEND":         uint64(wire.FlagResend),
		"FLAG_COLLISION":      uint64(wire.FlagCollision),
		"FLAG_PREEMPTED":      uint64(wire.FlagPreempted),
		"FLAG_FLUSHED":        uint64(wire.FlagFlushed),
		"FLAG_BYPASS":         uint64(wire.FlagBypass),
		"FLAG_OVERFLOW":       uint64(wire.FlagOverflow),
		"FLAG_ECN":            uint64(wire.FlagECN),
		"FLAG_STALE":          uint64(wire.FlagStale),
		"FLAG_FLOAT":          uint64(wire.FlagFloat),
		"FLAG_CORRUPT":        uint64(wire.FlagCorrupt),
		"FLAG_UNICAST":        uint64(wire.FlagUnicast),
		"SLOT_STATE_ECN":      1,
		"SLOT_STATE_OVERFLOW": 2,
		"SLOT_STATE_COMPLETE": 4,
	}
	for e := wire.Event(0); e < wire.NumEvents; e++ {
		want["EVENT_"+strings.ToUpper(e.String())] = uint64(e)
	}
	for name, w := range want {
		got, ok := defs[name]
		if !ok {
			t.Errorf("%s: not #defined in define.p4/size.p4", name)
			continue
		}
		if got != w {
			t.Errorf("%s = %d in P4, %d in p4src/wire", name, got, w)
		}
	}
	// Every flag and event the P4 program defines must be known to Go too.
	for name, v := range defs {
		switch {
		case strings.HasPrefix(name, "FLAG_"):
			if _, ok := wire.FlagByName(strings.ToLower(strings.TrimPrefix(name, "FLAG_"))); !ok {
				t.Errorf("%s = %#x has no p4src/wire flag", name, v)
			}
		case strings.HasPrefix(name, "EVENT_") && name != "EVENT_NONE":
			if _, ok := wire.EventByName(strings.ToLower(strings.TrimPrefix(name, "EVENT_"))); !ok {
				t.Errorf("%s = %d has no p4src/wire event", name, v)
			}
		}
	}
	if defs["EVENT_NONE"] < uint64(wire.NumEvents) {
		t.Errorf("EVENT_NONE = %d collides with a counter index", defs["EVENT_NONE"])
	}
}

// TestForeachValue checks that INA_FOREACH_VALUE expands exactly 0..NUM_VALUES-1 once each.
func TestForeachValue(t *testing.T) {
	src, err := os.ReadFile("define.p4")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "#define INA_FOREACH_VALUE(M)")
	if start < 0 {
		t.Fatal("INA_FOREACH_VALUE not defined")
	}
	var body strings.Builder
	for _, line := range strings.Split(text[start:], "\n") {
		body.WriteString(line)
		if !strings.HasSuffix(strings.TrimSpace(line), `\`) {
			break
		}
	}
	seen := map[int]int{}
	for _, m := range regexp.MustCompile(`M\((\d+)\)`).FindAllStringSubmatch(body.String(), -1) {
		i, _ := strconv.Atoi(m[1])
		seen[i]++
	}
	if len(seen) != wire.NumValues {
		t.Errorf("INA_FOREACH_VALUE expands %d distinct indices, want %d", len(seen), wire.NumValues)
	}
	for i := 0; i < wire.NumValues; i++ {
		if seen[i] != 1 {
			t.Errorf("INA_FOREACH_VALUE expands M(%d) %d times", i, seen[i])
		}
	}
}
