package refswitch

import (
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/wire"
)

// runFaults passes n numbered packets through an injector and returns the numbers sent, in order.
func runFaults(cfg FaultConfig, port uint16, n int) ([]int, *portCounters) {
	st := &portCounters{}
	in := newInjector(cfg, port, st)
	var out []int
	for i := range n {
		sent, n := in.apply([]byte{byte(i >> 8), byte(i)})
		for _, f := range sent[:n] {
			out = append(out, int(f[0])<<8|int(f[1]))
		}
	}
	if f := in.flush(); f != nil {
		out = append(out, int(f[0])<<8|int(f[1]))
	}
	return out, st
}

func TestFaultInjectionIsSeeded(t *testing.T) {
	cfg := FaultConfig{Loss: 0.1, Dup: 0.05, Reorder: 0.05, Seed: 42}
	a, sa := runFaults(cfg, 1, 10000)
	b, sb := runFaults(cfg, 1, 10000)
	if !slices.Equal(a, b) || sa.FaultLost.Load() != sb.FaultLost.Load() {
		t.Fatal("same seed, same packets: different faults")
	}
	c, _ := runFaults(FaultConfig{Loss: 0.1, Dup: 0.05, Reorder: 0.05, Seed: 43}, 1, 10000)
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same faults")
	}
	d, _ := runFaults(cfg, 2, 10000)
	if slices.Equal(a, d) {
		t.Fatal("ports 1 and 2 share their fault sequence")
	}
	// The rates are what was asked for (bounds are wide; the draw is fixed by the seed).
	lost, dup, reo := sa.FaultLost.Load(), sa.FaultDuplicated.Load(), sa.FaultReordered.Load()
	if lost < 900 || lost > 1100 || dup < 400 || dup > 600 || reo < 350 || reo > 600 {
		t.Fatalf("lost %d dup %d reordered %d of 10000", lost, dup, reo)
	}
	if len(a) != 10000-int(lost)+int(dup) {
		t.Fatalf("%d packets out, want %d", len(a), 10000-int(lost)+int(dup))
	}
	inversions := 0
	for i := 1; i < len(a); i++ {
		if a[i] < a[i-1] {
			inversions++
		}
	}
	if inversions == 0 {
		t.Fatal("no packet was reordered")
	}
}

func TestNoFaultsIsIdentity(t *testing.T) {
	got, _ := runFaults(FaultConfig{Seed: 7}, 0, 100)
	for i, v := range got {
		if v != i {
			t.Fatalf("packet %d came out as %d", i, v)
		}
	}
}

func TestReorderSwapsWithNext(t *testing.T) {
	in := newInjector(FaultConfig{Reorder: 1}, 0, &portCounters{})
	if out, n := in.apply([]byte{1}); n != 0 {
		t.Fatalf("first packet not held: %v", out[:n])
	}
	out, n := in.apply([]byte{2})
	if n != 2 || out[0][0] != 2 || out[1][0] != 1 {
		t.Fatalf("want 2 then 1, got %v", out[:n])
	}
}

func TestShaperPacesToRate(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	s := newShaper(8) // 8 Mbit/s = 1 MB/s
	s.now, s.last = func() time.Time { return now }, now
	s.sleep = func(d time.Duration) { slept += d; now = now.Add(d) }
	for range 1000 {
		s.wait(1000)
	}
	// 1 MB at 1 MB/s, less the initial burst.
	want := time.Second - time.Duration(shaperBurst)*time.Microsecond
	if slept < want-time.Millisecond || slept > want+time.Millisecond {
		t.Fatalf("slept %v for 1 MB at 1 MB/s, want %v", slept, want)
	}
}

// inaFrame is a well-formed INA data frame whose values are all i.
func inaFrame(i int) []byte {
	f := wire.Frame{Addr: wire.Addr{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), SrcIP: []byte{10, 0, 0, 1}, DstIP: []byte{10, 0, 0, 2}}, TTL: 64}
	f.INA = wire.Header{Version: wire.Version, Type: wire.TypeData, Job: 1, Seq: uint32(i), Bitmap: 1}
	for k := range f.INA.Values {
		f.INA.Values[k] = int32(i)
	}
	return f.Marshal()
}

func TestCorruptFlipsOneValueBit(t *testing.T) {
	cfg := FaultConfig{Corrupt: 0.1, Seed: 9}
	st := &portCounters{}
	in := newInjector(cfg, 3, st)
	var hits []int
	for i := range 2000 {
		want := inaFrame(i)
		f := slices.Clone(want)
		out, n := in.apply(f)
		if n != 1 {
			t.Fatalf("packet %d: %d out with only corruption on", i, n)
		}
		var diff []int
		for b := range f {
			for x := want[b] ^ out[0][b]; x != 0; x &= x - 1 {
				diff = append(diff, b)
			}
		}
		switch {
		case len(diff) == 0:
		case len(diff) == 1 && diff[0] >= valuesAt:
			hits = append(hits, i)
			var fr wire.Frame
			if err := fr.Unmarshal(out[0]); err != nil {
				t.Fatalf("packet %d no longer decodes: %v", i, err)
			}
			if wire.IPv4Checksum(out[0][14:34]) != 0 {
				t.Fatalf("packet %d: IPv4 checksum broken by the corruption", i)
			}
		default:
			t.Fatalf("packet %d: bits changed at bytes %v, want one bit among the values", i, diff)
		}
	}
	if n := st.FaultCorrupted.Load(); n != uint64(len(hits)) || n < 150 || n > 250 {
		t.Fatalf("%d corrupted, %d counted, of 2000 at 0.1", len(hits), n)
	}
	// The same seed corrupts the same packets; other frames are never touched.
	in2 := newInjector(cfg, 3, &portCounters{})
	var again []int
	for i := range 2000 {
		f := inaFrame(i)
		in2.apply([]byte{1, 2, 3}) // not INA: draws nothing, changes nothing
		if out, _ := in2.apply(f); !slices.Equal(out[0], inaFrame(i)) {
			again = append(again, i)
		}
	}
	if !slices.Equal(hits, again) {
		t.Fatal("same seed, same INA frames: different corruptions")
	}
}

func TestCorruptLeavesOtherFaultsAsTheyWere(t *testing.T) {
	base := FaultConfig{Loss: 0.1, Dup: 0.05, Reorder: 0.05, Seed: 42}
	withCorrupt := base
	withCorrupt.Corrupt = 0.5
	run := func(cfg FaultConfig) []uint32 {
		in := newInjector(cfg, 1, &portCounters{})
		var seqs []uint32
		for i := range 3000 {
			out, n := in.apply(inaFrame(i))
			for _, f := range out[:n] {
				seqs = append(seqs, binary.BigEndian.Uint32(f[valuesAt-8:]))
			}
		}
		return seqs
	}
	if !slices.Equal(run(base), run(withCorrupt)) {
		t.Fatal("turning corruption on changed which packets were lost, duplicated or reordered")
	}
}

// TestLiveFaults changes the rates through PUT /faults between frames: a port follows the rates in
// force at each frame, re-seeded on a change, and bad bodies get a 400 that changes nothing.
func TestLiveFaults(t *testing.T) {
	live := newLiveFaults(FaultConfig{})
	mux := http.NewServeMux()
	live.register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	put := func(body string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/faults", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	st := &portCounters{}
	in := newInjector(FaultConfig{}, 1, st)
	sent := func(n int) int {
		total := 0
		for i := range n {
			in.follow(live, 1)
			_, k := in.apply([]byte{byte(i)})
			total += k
		}
		return total
	}
	if got := sent(100); got != 100 {
		t.Fatalf("no faults: %d of 100 sent", got)
	}
	if code := put(`{"loss": 1, "seed": 3}`); code != http.StatusOK {
		t.Fatalf("PUT loss 1: %d", code)
	}
	if got := sent(100); got != 0 || st.FaultLost.Load() != 100 {
		t.Fatalf("loss 1: %d sent, %d counted lost", got, st.FaultLost.Load())
	}
	for _, bad := range []string{`{"loss": 2}`, `{"loss": -0.1}`, `{"lose": 1}`, `{"loss": 0}{}`, `not json`,
		`{"loss": "1"}`, `{"dup": NaN}`, `{"loss": 0, "pad": "` + strings.Repeat("x", maxFaultBody) + `"}`} {
		if code := put(bad); code != http.StatusBadRequest {
			t.Errorf("PUT %.40q: %d, want 400", bad, code)
		}
	}
	if got := sent(10); got != 0 {
		t.Fatalf("a rejected PUT changed the rates: %d of 10 sent", got)
	}
	if code := put(`{"corrupt": 0.5, "reorder": 0.1}`); code != http.StatusOK {
		t.Fatalf("PUT corrupt: %d", code)
	}
	if code := put(`{}`); code != http.StatusOK {
		t.Fatalf("PUT {}: %d", code)
	}
	if got := sent(100); got != 100 {
		t.Fatalf("faults off again: %d of 100 sent", got)
	}
}
