package eval

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The t-interval against a hand computation: 1..5 has mean 3, sd 1.5811, t(0.975, 4) = 2.7764.
func TestTInterval(t *testing.T) {
	c := tInterval([]float64{1, 2, 3, 4, 5})
	if c.mean != 3 || math.Abs(c.half-2.7764*1.58114/math.Sqrt(5)) > 1e-3 || c.n != 5 {
		t.Errorf("interval of 1..5: %+v, want 3 ± 1.963", c)
	}
	if !c.above() || c.below() || c.sig() != "yes" {
		t.Errorf("3 ± 1.96 is above 0")
	}
	if z := tInterval([]float64{-1, 1}); z.above() || z.below() || z.sig() != "no" {
		t.Errorf("-1, 1 is not significant: %+v", z)
	}
	if one := tInterval([]float64{2}); !math.IsNaN(one.half) || one.above() {
		t.Errorf("one seed has no interval: %+v", one)
	}
}

// Verdicts follow the rule: a loss is more than 1% worse on the mean (significant when the
// interval lies below 0); a win needs the interval above 0.
func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		g    ci
		want string
	}{{ci{0.02, 0.01, 5}, "win"}, {ci{0.02, 0.03, 5}, "tie"}, {ci{-0.02, 0.05, 5}, "loss, not significant"}, {ci{-0.02, 0.01, 5}, "loss"},
		{ci{-0.005, 0.002, 5}, "tie (significantly worse, within 1%)"}} {
		if v := verdict(c.g); v != c.want {
			t.Errorf("verdict(%+v) = %q, want %q", c.g, v, c.want)
		}
	}
}

// A verdict stays open while its interval reaches -1% (the loss line) on both sides, however
// narrow, or is wide and reaches 0 on both sides: which way the mean leans does not matter.
func TestOpen(t *testing.T) {
	for _, c := range []struct {
		g    ci
		want bool
	}{{ci{0.01, 0.05, 5}, true}, {ci{-0.01, 0.05, 5}, true}, {ci{0.06, 0.05, 5}, false}, {ci{-0.07, 0.05, 5}, false},
		{ci{0.03, 0.035, 5}, true}, // wide, reaches 0, not -1%
		{ci{-0.01, 0.02, 40}, true}, {ci{0.015, 0.02, 40}, false}, {ci{-0.005, 0.008, 300}, true}, {ci{0.007, 0.012, 300}, false},
		{ci{-0.02, 0.005, 400}, false}, {ci{-0.005, 0.003, 400}, false}, {ci{0, math.NaN(), 1}, false}} {
		if got := open(c.g, 0.025); got != c.want {
			t.Errorf("open(%+v) = %v, want %v", c.g, got, c.want)
		}
	}
}

// A packets summary loads, is rejected when malformed, and section 11.1 ranks the policies both
// ways with Spearman's rho.
func TestPackets(t *testing.T) {
	dir := t.TempDir()
	good := `{"switch":"ref","topology":"two-racks","trace":"demo.json","jobs":14,"repeats":2,"work":1,"policies":[
	 {"policy":"netpack","measured_mean_jct_s":[4,5],"sim_mean_jct_s":3,"load1":[1,2]},
	 {"policy":"gandiva","measured_mean_jct_s":[6,6],"sim_mean_jct_s":4,"load1":[1,2]},
	 {"policy":"gpu-balance","measured_mean_jct_s":[9,11],"sim_mean_jct_s":3.5,"load1":[1,2]}]}`
	f := filepath.Join(dir, "p.json")
	if err := os.WriteFile(f, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	pk, err := LoadPackets(f)
	if err != nil || pk == nil {
		t.Fatal(pk, err)
	}
	if x, err := LoadPackets(filepath.Join(dir, "none.json")); x != nil || err != nil {
		t.Errorf("a missing summary: %v %v, want nil, nil", x, err)
	}
	bad := strings.Replace(good, `[4,5]`, `[4]`, 1)
	if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPackets(f); err == nil {
		t.Error("a policy with fewer rounds than repeats was accepted")
	}
	rep := &Report{Cfg: Config{Packets: pk}}
	var b strings.Builder
	rep.packetsSection(func(format string, a ...any) { b.WriteString(fmt.Sprintf(format, a...)) })
	md := b.String()
	// Measured order netpack, gandiva, gpu-balance; simulated netpack, gpu-balance, gandiva.
	for _, want := range []string{"| netpack | 4.5 ± 6.4 | 3.0 | 1 | 1 |", "| gandiva | 6.0 ± 0.0 | 4.0 | 2 | 3 |", "| gpu-balance | 10.0 ± 12.7 | 3.5 | 3 | 2 |",
		"Spearman's rank correlation of the two orders: 0.50 over 3 policies", "best baseline measured (gandiva)"} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
}

// UpdatePackets rewrites section 11.1 alone: a report rendered without a summary, updated with
// one, equals the report rendered with it.
func TestUpdatePackets(t *testing.T) {
	pk := &Packets{Switch: "ref", Topology: "t", Trace: "d", Jobs: 3, Repeats: 2, Work: 1, Policies: []PacketPolicy{
		{Policy: "netpack", MeasuredMeanJCT: []float64{1, 2}, SimMeanJCT: 1, Load1: []float64{1, 1}},
		{Policy: "gandiva", MeasuredMeanJCT: []float64{2, 3}, SimMeanJCT: 2, Load1: []float64{1, 1}}}}
	render := func(pk *Packets) string {
		var b strings.Builder
		rep := &Report{Cfg: Config{Packets: pk}}
		p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
		p("before\n")
		rep.packetsSection(p)
		p("after\n")
		return b.String()
	}
	got, err := UpdatePackets(render(nil), pk)
	if err != nil || got != render(pk) {
		t.Errorf("updated report differs (%v):\n%s\nwant:\n%s", err, got, render(pk))
	}
	if _, err := UpdatePackets("no markers", pk); err == nil {
		t.Error("a report without markers was accepted")
	}
}

// Ties share their mean rank, so equal simulated means are no order.
func TestRankingTies(t *testing.T) {
	r := ranking([]float64{15, 15, 34, 15})
	if want := []float64{2, 2, 4, 2}; !slices.Equal(r, want) {
		t.Errorf("ranks %v, want %v", r, want)
	}
	if rho := spearman([]float64{1, 2, 3}, []float64{3, 2, 1}); math.Abs(rho+1) > 1e-12 {
		t.Errorf("reversed order: rho %v, want -1", rho)
	}
}
