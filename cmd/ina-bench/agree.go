package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A figure of a make bench table: its median and interquartile range.
type figure struct{ med, q1, q3 float64 }

// overlaps reports whether the two figures' interquartile ranges meet.
func (f figure) overlaps(g figure) bool { return f.q1 <= g.q3 && g.q1 <= f.q3 }

// inside reports whether f's median lies within g's interquartile range.
func (f figure) inside(g figure) bool { return g.q1 <= f.med && f.med <= g.q3 }

var (
	columnSep = regexp.MustCompile(`\s{2,}`)
	// "80.2 Mbit/s (65.1-80.9)", "the path's limit 109 Mbit/s (106-127)", "4.79 GB/s (CPU) (4.75-5.62)"
	figureRE = regexp.MustCompile(`([0-9][0-9.]*k?)[^0-9(]*(?:\(CPU\)[^0-9(]*)?\(([0-9][0-9.]*k?)-([0-9][0-9.]*k?)\)$`)
)

func parseNum(s string) (float64, error) {
	mult := 1.0
	if strings.HasSuffix(s, "k") {
		s, mult = strings.TrimSuffix(s, "k"), 1e3
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
	f.q1, errs[1] = parseNum(m[2])
	f.q3, errs[2] = parseNum(m[3])
	return f, errs[0] == nil && errs[1] == nil && errs[2] == nil
}

// readTable reads the figures of a make bench table (BENCH_OUT, or the table it prints): per row,
// its value and its ratio, keyed by the row's name and its reference's name, in table order.
func readTable(r io.Reader) (keys []string, figs map[string]figure, err error) {
	figs = map[string]figure{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		cols := columnSep.Split(strings.TrimSpace(sc.Text()), -1)
		if len(cols) < 4 || cols[0] == "measurement" {
			continue
		}
		ref := cols[2] // "the path's limit 109 Mbit/s (106-127)": its name is what precedes the figure
		if m := figureRE.FindStringSubmatchIndex(ref); m != nil {
			ref = strings.TrimSpace(ref[:m[2]])
		}
		for _, c := range []struct{ what, col string }{{"value", cols[1]}, {"ratio to " + ref, cols[3]}} {
			f, ok := parseFigure(c.col)
			if !ok {
				continue
			}
			k := cols[0] + ": " + c.what
			if _, dup := figs[k]; !dup {
				keys = append(keys, k)
			}
			figs[k] = f
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

// agree compares two make bench tables figure by figure: two runs agree on a figure when their
// interquartile ranges overlap (each within the other's stated spread); it also says when each
// median lies inside the other's range. It returns how many figures of a and b agree.
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
			verdict += ", medians inside each other's IQR"
		}
		fmt.Fprintf(w, "%-80s %s (%s-%s) | %s (%s-%s)  %s\n", k, num(x.med), num(x.q1), num(x.q3), num(y.med), num(y.q1), num(y.q3), verdict)
	}
	fmt.Fprintf(w, "agree: %d of %d figures' interquartile ranges overlap; in %d each median lies inside the other's range\n", agreed, compared, inside)
	return agreed, compared, nil
}

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
