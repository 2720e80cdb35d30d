package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// samples are a bench's measurements: key -> repetition -> value. Repetition r of every key was
// taken in the same round, so two keys' values of one repetition form a pair.
type samples map[string]map[int]float64

// readSamples reads "key repetition value" lines (others are ignored).
func readSamples(r io.Reader) (samples, error) {
	s := samples{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		rep, err1 := strconv.Atoi(f[1])
		v, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bad sample line %q", sc.Text())
		}
		if s[f[0]] == nil {
			s[f[0]] = map[int]float64{}
		}
		s[f[0]][rep] = v
	}
	return s, sc.Err()
}

// rowSpec is one line of the table: "name|key|unit|reference name|reference key or =constant|
// target|bound|ceiling". The value is the median of key's repetitions; the ratio is the median of
// the ratios of the pairs (key / reference in the same repetition), as benchstat compares; target
// is ">= x" or "<= x" on the ratio, or empty; bound is the widest confidence interval of the
// ratio's median (spreadOf), relative to the median, that still gives a verdict (default
// defaultBound); ceiling, "what:keyA/keyB", is the most the host let the ratio reach (the cores
// it gave two threads against one, say): a ">=" target that the ceiling's whole interval lies
// under is not the code's to meet here, and the verdict says so instead of MISSED or SPREAD.
type rowSpec struct {
	name, key, unit, refName, refKey, target string
	bound                                    float64
	ceilName, ceilA, ceilB                   string
}

// defaultBound: a ratio whose interval is wider than this, relative to its median, claims neither
// met nor missed: known only to ±25%, it is no figure to judge by. (For normal samples the range
// of 5 is about 2.3 times their interquartile range, so this is a little stricter than 25% on the
// interquartile range.)
const defaultBound = 0.5

func parseRowSpec(line string) (rowSpec, error) {
	f := strings.Split(line, "|")
	if len(f) < 6 || len(f) > 8 {
		return rowSpec{}, fmt.Errorf("row %q: want name|key|unit|reference name|reference key|target[|bound[|ceiling]]", line)
	}
	r := rowSpec{name: f[0], key: f[1], unit: f[2], refName: f[3], refKey: f[4], target: f[5], bound: defaultBound}
	if len(f) == 8 {
		what, keys, ok1 := strings.Cut(f[7], ":")
		a, b, ok2 := strings.Cut(keys, "/")
		if !ok1 || !ok2 || what == "" || a == "" || b == "" {
			return rowSpec{}, fmt.Errorf("row %q: ceiling %q: want what:keyA/keyB", line, f[7])
		}
		r.ceilName, r.ceilA, r.ceilB = what, a, b
	}
	if len(f) >= 7 && f[6] != "" {
		b, err := strconv.ParseFloat(f[6], 64)
		if err != nil || b <= 0 {
			return rowSpec{}, fmt.Errorf("row %q: bad bound %q", line, f[6])
		}
		r.bound = b
	}
	if r.target != "" {
		if _, _, err := parseTarget(r.target); err != nil {
			return rowSpec{}, fmt.Errorf("row %q: %w", line, err)
		}
	}
	return r, nil
}

func parseTarget(t string) (op string, v float64, err error) {
	f := strings.Fields(t)
	if len(f) == 2 && (f[0] == ">=" || f[0] == "<=") {
		if v, err = strconv.ParseFloat(f[1], 64); err == nil {
			return f[0], v, nil
		}
	}
	return "", 0, fmt.Errorf("target %q: want '>= x' or '<= x'", t)
}

// row is a rendered table row.
type row [6]string

// render computes a row from the samples; a row without samples says so.
func (r rowSpec) render(s samples) row {
	vals := s[r.key]
	if len(vals) == 0 {
		return row{r.name, "no samples", "", "", r.target, ""}
	}
	var a []float64
	for _, v := range vals {
		a = append(a, v)
	}
	sa := spreadOf(a)
	out := row{r.name, fmt.Sprintf("%s %s %s", num(sa.med), r.unit, interval(sa)), "", "", r.target, ""}
	if r.refKey == "" {
		return out
	}
	var ref, ratios []float64
	if c, ok := strings.CutPrefix(r.refKey, "="); ok {
		k, err := strconv.ParseFloat(c, 64)
		if err != nil || k == 0 {
			out[2] = "bad constant " + c
			return out
		}
		ref = []float64{k}
		for _, v := range a {
			ratios = append(ratios, v/k)
		}
		out[2] = fmt.Sprintf("%s %s %s", r.refName, num(k), r.unit)
	} else {
		for rep, b := range s[r.refKey] {
			ref = append(ref, b)
			if v, ok := vals[rep]; ok && b != 0 {
				ratios = append(ratios, v/b)
			}
		}
		if len(ref) == 0 {
			out[2] = r.refName + ": no samples"
			return out
		}
		sr := spreadOf(ref)
		out[2] = fmt.Sprintf("%s %s %s %s", r.refName, num(sr.med), r.unit, interval(sr))
	}
	if len(ratios) == 0 {
		out[3] = "no pairs"
		return out
	}
	rs := spreadOf(ratios)
	out[3] = fmt.Sprintf("%.2f (%.2f-%.2f)", rs.med, rs.lo, rs.hi)
	if r.target == "" {
		return out
	}
	op, t, _ := parseTarget(r.target)
	var ceil spread
	capped := false
	if r.ceilA != "" && op == ">=" {
		var cr []float64
		for rep, b := range s[r.ceilB] {
			if v, ok := s[r.ceilA][rep]; ok && b != 0 {
				cr = append(cr, v/b)
			}
		}
		if len(cr) >= 5 {
			ceil = spreadOf(cr)
			capped = ceil.hi < t
		}
	}
	switch {
	case len(ratios) < 5:
		out[5] = fmt.Sprintf("%d pairs: no verdict", len(ratios))
	case capped:
		out[5] = fmt.Sprintf("HOST: %s %.2f (%.2f-%.2f) < %s", r.ceilName, ceil.med, ceil.lo, ceil.hi, strconv.FormatFloat(t, 'f', -1, 64))
	case rs.rel() > r.bound:
		out[5] = fmt.Sprintf("SPREAD %.0f%% > %.0f%%", 100*rs.rel(), 100*r.bound)
	case op == ">=" && rs.lo >= t, op == "<=" && rs.hi <= t:
		out[5] = "met"
	case op == ">=" && rs.hi < t, op == "<=" && rs.lo > t:
		out[5] = "MISSED"
	default:
		// The median may lie on either side of the target: as sim/eval's verdicts, open.
		out[5] = "OPEN: interval spans it"
	}
	return out
}

// num prints a figure with three significant digits or more (1.23G, 45.6M, 123.4k, 1.23, 0.0123).
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.4gM", v/1e6)
	case a >= 1e5:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func interval(s spread) string { return fmt.Sprintf("(%s-%s)", num(s.lo), num(s.hi)) }

// table renders the rows, aligned, with a header.
func table(w io.Writer, specs []rowSpec, s samples) {
	rows := []row{{"measurement", "value (CI)", "reference (CI)", "ratio (CI)", "target", "verdict"}}
	for _, r := range specs {
		rows = append(rows, r.render(s))
	}
	var width [6]int
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i < len(r)-1 {
				fmt.Fprintf(&b, "%-*s  ", width[i], c)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// tableFiles prints the table of the rows in specPath over the samples in samplesPath. A spec
// line "note|text" prints text after the table with every {key} replaced by key's median and
// its interval; empty lines and lines starting with # are skipped.
func tableFiles(samplesPath, specPath string) error {
	sf, err := os.Open(samplesPath)
	if err != nil {
		return err
	}
	defer sf.Close()
	s, err := readSamples(sf)
	if err != nil {
		return err
	}
	spec, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var rows []rowSpec
	var notes []string
	for _, l := range strings.Split(string(spec), "\n") {
		switch {
		case strings.TrimSpace(l) == "", strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "note|"):
			notes = append(notes, fillNote(strings.TrimPrefix(l, "note|"), s))
		default:
			r, err := parseRowSpec(l)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
	}
	table(os.Stdout, rows, s)
	fmt.Println(ciNote(s))
	for _, n := range notes {
		fmt.Println(n)
	}
	return nil
}

// ciNote says what the intervals are, for the most rounds any key has.
func ciNote(s samples) string {
	n := 0
	for _, v := range s {
		n = max(n, len(v))
	}
	k, what := medianRank(n), "their range"
	if k > 1 {
		what = fmt.Sprintf("sorted, values %d to %d", k, n+1-k)
	}
	return fmt.Sprintf("CI: the median's distribution-free %.0f%% confidence interval over %d rounds (%s), as benchstat's; a ratio's is that of the rounds' paired ratios. A target is met or missed only when the whole interval lies on one side of it.", 100*medianCoverage(n, k), n, what)
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.]+)\}`)

// fillNote replaces each {key} in text with "median (lo-hi)" of key's samples.
func fillNote(text string, s samples) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		vals := s[m[1:len(m)-1]]
		if len(vals) == 0 {
			return "?"
		}
		var a []float64
		for _, v := range vals {
			a = append(a, v)
		}
		sp := spreadOf(a)
		return fmt.Sprintf("%s %s", num(sp.med), interval(sp))
	})
}
