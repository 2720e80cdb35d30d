package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A figure of a make bench table: its median and the median's confidence interval.
type figure struct{ med, lo, hi float64 }

// overlaps reports whether the two figures' intervals meet.
func (f figure) overlaps(g figure) bool { return f.lo <= g.hi && g.lo <= f.hi }

// inside reports whether f's median lies within g's interval.
func (f figure) inside(g figure) bool { return g.lo <= f.med && f.med <= g.hi }

var (
	columnSep = regexp.MustCompile(`\s{2,}`)
	// "80.2 Mbit/s (65.1-80.9)", "the path's limit 109 Mbit/s (106-127)", "4.79 GB/s (CPU) (4.75-5.62)"
	figureRE = regexp.MustCompile(`([0-9][0-9.]*[kMG]?)[^0-9(]*(?:\(CPU\)[^0-9(]*)?\(([0-9][0-9.]*[kMG]?)-([0-9][0-9.]*[kMG]?)\)$`)
)

func parseNum(s string) (float64, error) {
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"k", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

func parseFigure(s string) (figure, bool) {
	m := figureRE.FindStringSubmatch(s)
	if m == nil {
		return figure{}, false
	}
	var f figure
	var errs [3]error
	f.med, errs[0] = parseNum(m[1])
	f.lo, errs[1] = parseNum(m[2])
	f.hi, errs[2] = parseNum(m[3])
	return f, errs[0] == nil && errs[1] == nil && errs[2] == nil
}

// readTable reads the figures of a make bench table (BENCH_OUT, or the table it prints): per row,
// its value and its ratio, keyed by the row's name and its reference's name, and each reference
// that no row shows as its value (the bare ring forwarder, the path's limit, a p50, copy()), keyed
// by the row's group (its name up to its last ": ", or all of it) and the reference's name; in
// table order.
func readTable(r io.Reader) (keys []string, figs map[string]figure, err error) {
	figs = map[string]figure{}
	seen := map[string]bool{} // figures as printed ("71.6 Mbit/s (69.6-74.9)"): one measurement once
	add := func(k, text string, measured bool) {
		f, ok := parseFigure(text)
		if !ok || measured && seen[text] {
			return
		}
		if measured {
			seen[text] = true
		}
		if _, dup := figs[k]; !dup {
			keys = append(keys, k)
		}
		figs[k] = f
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		cols := columnSep.Split(strings.TrimSpace(sc.Text()), -1)
		if len(cols) < 4 || cols[0] == "measurement" {
			continue
		}
		add(cols[0]+": value", cols[1], true)
		ref, refFig := cols[2], "" // "the path's limit 109 Mbit/s (106-127)": the name precedes the figure
		if m := figureRE.FindStringSubmatchIndex(ref); m != nil {
			ref, refFig = strings.TrimSpace(ref[:m[2]]), ref[m[2]:]
		}
		add(cols[0]+": ratio to "+ref, cols[3], false)
		if refFig != "" {
			group := cols[0]
			if i := strings.LastIndex(group, ": "); i > 0 {
				group = group[:i]
			}
			add(group+": reference "+ref, refFig, true)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("no rows of make bench found")
	}
	return keys, figs, nil
}

// agree compares two make bench tables figure by figure: two runs agree on a figure when the
// confidence intervals of its median overlap (each within the other's stated spread); it also
// says when each median lies inside the other's interval. It returns how many figures of a and b
// agree. When the bare ring forwarder, which runs none of this project's code, differs between
// the runs, it says so: the host's speed changed, and the absolute rates with it.
func agree(w io.Writer, a, b io.Reader) (agreed, compared int, err error) {
	keys, fa, err := readTable(a)
	if err != nil {
		return 0, 0, fmt.Errorf("first table: %w", err)
	}
	_, fb, err := readTable(b)
	if err != nil {
		return 0, 0, fmt.Errorf("second table: %w", err)
	}
	inside := 0
	for _, k := range keys {
		x, okA := fa[k]
		y, okB := fb[k]
		if !okA || !okB {
			continue
		}
		compared++
		verdict := "DIFFER"
		if x.overlaps(y) {
			agreed++
			verdict = "agree"
		}
		if x.inside(y) && y.inside(x) {
			inside++
			verdict += ", medians inside each other's interval"
		}
		fmt.Fprintf(w, "%-80s %s (%s-%s) | %s (%s-%s)  %s\n", k, num(x.med), num(x.lo), num(x.hi), num(y.med), num(y.lo), num(y.hi), verdict)
	}
	fmt.Fprintf(w, "agree: %d of %d figures' intervals overlap; in %d each median lies inside the other's interval\n", agreed, compared, inside)
	if x, y := fa[hostProbe], fb[hostProbe]; x.med > 0 && y.med > 0 && !x.overlaps(y) {
		fmt.Fprintf(w, "host: the bare ring forwarder (none of this project's code) went from %s to %s (%+.0f%%): the machine's speed changed between the runs, and every absolute rate with it; the ratios to same-round references are what compare\n",
			num(x.med), num(y.med), 100*(y.med/x.med-1))
	}
	return agreed, compared, nil
}

// hostProbe is the figure that measures the host alone.
const hostProbe = "forwarding, 1 port: reference bare ring forwarder"

func agreeFiles(pathA, pathB string) error {
	a, err := os.Open(pathA)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := os.Open(pathB)
	if err != nil {
		return err
	}
	defer b.Close()
	_, _, err = agree(os.Stdout, a, b)
	return err
}
