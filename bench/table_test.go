package bench

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}, {0.99, 4.96}} {
		if got := quantile(v, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile([]float64{1, 2, 3, 4}, 0.5); got != 2.5 {
		t.Errorf("median of 4 = %v, want 2.5", got)
	}
}

// The ratio is the median of the rounds' ratios, not the ratio of the medians: here the value
// and the reference drift together (a busier machine in later rounds), so every pair says 0.5,
// while the medians alone would say 3/8.
func TestRatioIsTheMedianOfPairs(t *testing.T) {
	s, err := readSamples(strings.NewReader("a 1 1\nb 1 2\na 2 2\nb 2 4\na 3 3\nb 3 6\na 4 40\nb 4 80\na 5 50\nb 5 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := parseRowSpec("x|a|u|ref|b|>= 0.4")
	got := r.render(s)
	if !strings.HasPrefix(got[3], "0.50 (0.50-0.50)") || got[5] != "met" {
		t.Errorf("row = %q, want ratio 0.50, met", got)
	}
	if !strings.HasPrefix(got[1], "3.00 u (1.00-50.0)") {
		t.Errorf("value = %q, want the median 3 with its interval, the range of 5", got[1])
	}
}

// The median's interval is the pair of order statistics that holds it with the coverage the
// binomial law gives, whatever the distribution.
func TestMedianInterval(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want float64
	}{{5, 1, 0.9375}, {6, 1, 0.96875}, {8, 2, 1 - 2*9.0/256}, {10, 3, 1 - 2*56.0/1024}, {3, 1, 0.75}, {4, 2, 0.375}} {
		if got := medianCoverage(c.n, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("coverage of x(%d)..x(%d) of %d = %v, want %v", c.k, c.n+1-c.k, c.n, got, c.want)
		}
	}
	rank := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // unsorted on purpose
		}
		return v
	}
	for _, c := range []struct {
		n      int
		lo, hi float64
	}{{1, 1, 1}, {3, 1, 3}, {5, 1, 5}, {7, 1, 7}, {8, 2, 7}, {10, 2, 9}, {20, 6, 15}} {
		s := spreadOf(rank(c.n))
		if s.lo != c.lo || s.hi != c.hi || s.med != float64(c.n+1)/2 {
			t.Errorf("%d values: median %v in [%v, %v], want %v in [%v, %v]", c.n, s.med, s.lo, s.hi, float64(c.n+1)/2, c.lo, c.hi)
		}
		if cov := medianCoverage(c.n, medianRank(c.n)); c.n >= 5 && cov < minCoverage {
			t.Errorf("%d values: coverage %v below %v", c.n, cov, minCoverage)
		}
	}
	// Checked by drawing: the interval of 5 draws holds the true median about 94% of the time.
	rng := rand.New(rand.NewPCG(1, 2))
	held := 0
	const trials = 20000
	for range trials {
		v := make([]float64, 5)
		for i := range v {
			v[i] = rng.ExpFloat64() // skewed: median ln 2
		}
		if s := spreadOf(v); s.lo <= math.Ln2 && math.Ln2 <= s.hi {
			held++
		}
	}
	if f := float64(held) / trials; math.Abs(f-0.9375) > 0.01 {
		t.Errorf("the interval held the median in %.3f of draws, want 0.9375", f)
	}
}

func TestVerdicts(t *testing.T) {
	five := func(vals ...float64) samples {
		s := samples{"a": {}, "b": {}}
		for i, v := range vals {
			s["a"][i] = v
			s["b"][i] = 1
		}
		return s
	}
	// ceiling adds c/d pairs from lo to hi over the five rounds.
	ceiling := func(s samples, lo, hi float64) samples {
		s["c"], s["d"] = map[int]float64{}, map[int]float64{}
		for i := range 5 {
			s["c"][i], s["d"][i] = lo+(hi-lo)*float64(i)/4, 1
		}
		return s
	}
	for _, c := range []struct {
		spec string
		s    samples
		want string
	}{
		{"x|a|u|r|b|>= 0.8", five(0.9, 0.9, 0.9, 0.9, 0.9), "met"},
		{"x|a|u|r|b|>= 0.8", five(0.7, 0.7, 0.7, 0.7, 0.7), "MISSED"},
		{"x|a|u|r|b|<= 1.5", five(1.4, 1.4, 1.4, 1.4, 1.4), "met"},
		// The whole interval has to be on one side: a median past the target is not enough.
		{"x|a|u|r|b|>= 0.8", five(0.75, 0.78, 0.81, 0.82, 0.85), "OPEN: interval spans it"},
		{"x|a|u|r|b|>= 0.8", five(0.75, 0.78, 0.79, 0.82, 0.85), "OPEN: interval spans it"},
		{"x|a|u|r|b|<= 1.5", five(1.0, 1.2, 1.6, 2.5, 3.0), "SPREAD 125% > 50%"},
		{"x|a|u|r|b|<= 1.5|1.5", five(1.0, 1.2, 1.6, 2.5, 3.0), "OPEN: interval spans it"},
		{"x|a|u|r|b|<= 1.5|0.9", five(1.6, 1.7, 2.0, 2.5, 3.0), "MISSED"},
		{"x|a|u|r|b|>= 0.8", samples{"a": {1: 1}, "b": {1: 1}}, "1 pairs: no verdict"},
		{"x|a|u|r|=2|>= 0.4", five(1, 1, 1, 1, 1), "met"},
		// A ceiling (the cores the host gave, c/d) wholly under the target: the host's verdict,
		// whatever the spread; one that reaches the target leaves the verdict to the ratio.
		{"x|a|u|r|b|>= 1.8||cores given:c/d", ceiling(five(0.6, 0.9, 1.0, 1.2, 1.8), 1.0, 1.1), "HOST: cores given 1.05 (1.00-1.10) < 1.8"},
		{"x|a|u|r|b|>= 1.8||cores given:c/d", ceiling(five(1.0, 1.1, 1.1, 1.2, 1.3), 1.5, 1.9), "MISSED"},
		{"x|a|u|r|b|>= 1.8||cores given:c/d", ceiling(five(1.9, 1.9, 2.0, 2.0, 2.0), 1.9, 2.0), "met"},
	} {
		r, err := parseRowSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.render(c.s)[5]; got != c.want {
			t.Errorf("%s over %v: verdict %q, want %q", c.spec, c.s["a"], got, c.want)
		}
	}
}

func TestBadInput(t *testing.T) {
	for _, l := range []string{"k 1 x", "k one 2", "k 1 NaN"} {
		if _, err := readSamples(strings.NewReader(l)); err == nil {
			t.Errorf("sample %q accepted", l)
		}
	}
	for _, l := range []string{"a|b|c", "x|a|u|r|b|> 1", "x|a|u|r|b|>= 1|-1", "x|a|u|r|b|>= 1||c/d", "x|a|u|r|b|>= 1||w:c"} {
		if _, err := parseRowSpec(l); err == nil {
			t.Errorf("row %q accepted", l)
		}
	}
	r, _ := parseRowSpec("x|missing|u|r|b|>= 1")
	if got := r.render(samples{}); got[1] != "no samples" || got[5] != "" {
		t.Errorf("row without samples = %q", got)
	}
}

func TestTableAligned(t *testing.T) {
	s, _ := readSamples(strings.NewReader("a 1 1\nb 1 2\n"))
	r1, _ := parseRowSpec("short|a|u|r|b|")
	r2, _ := parseRowSpec("a much longer name|a|u|r|b|")
	var b bytes.Buffer
	table(&b, []rowSpec{r1, r2}, s)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Index(lines[1], "1.00 u") != strings.Index(lines[2], "1.00 u") {
		t.Errorf("columns not aligned:\n%s", b.String())
	}
}

func TestCINote(t *testing.T) {
	five, _ := readSamples(strings.NewReader("k 1 1\nk 2 2\nk 3 3\nk 4 4\nk 5 5\nj 1 1\n"))
	ten := samples{"k": {}}
	for i := range 10 {
		ten["k"][i] = float64(i)
	}
	for _, c := range []struct {
		s    samples
		want string
	}{{five, "94% confidence interval over 5 rounds (their range)"}, {ten, "98% confidence interval over 10 rounds (sorted, values 2 to 9)"}} {
		if got := ciNote(c.s); !strings.Contains(got, c.want) {
			t.Errorf("ciNote = %q, want it to say %q", got, c.want)
		}
	}
}

func TestFillNote(t *testing.T) {
	s, _ := readSamples(strings.NewReader("k 1 1\nk 2 2\nk 3 3\n"))
	if got := fillNote("slow {k}, none {missing}", s); got != "slow 2.00 (1.00-3.00), none ?" {
		t.Errorf("fillNote = %q", got)
	}
}

// Figures print with three or four significant digits and a unit prefix past 100k, and read back
// (agree compares tables by reading them) to within that rounding: a spin loop's 233.3 M steps a
// second printed "233300.0k".
func TestNumRoundTrip(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0.01234, "0.0123"}, {1.234, "1.23"}, {12.34, "12.3"}, {1234, "1234"}, {123_456, "123.5k"},
		{1_946_000, "1.946M"}, {233_300_000, "233.3M"}, {2_333_000_000, "2.33G"},
	} {
		got := num(c.v)
		if got != c.want {
			t.Errorf("num(%v) = %q, want %q", c.v, got, c.want)
		}
		back, err := parseNum(got)
		if err != nil || math.Abs(back-c.v) > 0.005*c.v {
			t.Errorf("parseNum(%q) = %v, %v; want about %v", got, back, err, c.v)
		}
	}
	f, ok := parseFigure("host 334.1M step/s (221.4M-592.5M)")
	if !ok || f.med != 334.1e6 || f.lo != 221.4e6 || f.hi != 592.5e6 {
		t.Errorf("parseFigure: %+v %v", f, ok)
	}
}
