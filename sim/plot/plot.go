// Package plot draws the simulator's figures (JCT CDFs, mean-JCT bars, sweeps) as PNG and SVG,
// readable where curves coincide: every series has its own colour, line style and marker, and is
// drawn in a fixed order with the first series on top.
package plot

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named sample (e.g. one policy's JCTs in hours).
type Series struct {
	Name   string
	Values []float64
}

// palette is colour-blind safe (Okabe-Ito).
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {0, 0, 0, 255}, {240, 228, 66, 255},
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}, {vg.Points(4), vg.Points(4)}, {vg.Points(1), vg.Points(3)}}

var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}}

// style gives series i its colour, dashes and marker.
func style(i int, l *plotter.Line, s *plotter.Scatter) {
	c := palette[i%len(palette)]
	if l != nil {
		l.Color = c
		l.Width = vg.Points(1.6)
		l.Dashes = dashes[i%len(dashes)]
	}
	if s != nil {
		s.Color = c
		s.Shape = glyphs[i%len(glyphs)]
		s.Radius = vg.Points(3)
	}
}

// spans reports whether positive values range over more than a factor of ten (a log axis reads
// better then).
func spans(vals ...[]float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, vs := range vals {
		for _, v := range vs {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	return hi > 10*lo
}

// CDF draws the empirical CDF of each series, on a log x axis when the values span more than 10x.
// Markers at every tenth of the jobs tell coinciding curves apart.
func CDF(title, xlabel string, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "fraction of jobs"
	var all [][]float64
	for _, s := range series {
		all = append(all, s.Values)
	}
	if spans(all...) {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Label.Text += " (log scale)"
	}
	p.Y.Min, p.Y.Max = 0, 1
	// Bottom right: CDFs of JCTs rise from the left, so that corner stays empty.
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Points(8)
	p.Legend.YOffs = vg.Points(8)
	p.Add(plotter.NewGrid())
	type layer struct {
		l *plotter.Line
		s *plotter.Scatter
	}
	var layers []layer
	for i, s := range series {
		xs := slices.Clone(s.Values)
		slices.Sort(xs)
		// thin to at most 400 points so the SVG stays small
		step := max(1, len(xs)/400)
		var pts, marks plotter.XYs
		for k := 0; k < len(xs); k += step {
			if xs[k] > 0 {
				pts = append(pts, plotter.XY{X: xs[k], Y: float64(k+1) / float64(len(xs))})
			}
		}
		n := len(xs)
		if n > 0 && xs[n-1] > 0 {
			pts = append(pts, plotter.XY{X: xs[n-1], Y: 1})
		}
		for q := 1; q <= 9; q++ {
			// markers at each decile, shifted per series so overlapping curves keep both visible
			k := min(n-1, (n*q)/10+i*n/100)
			if k >= 0 && xs[k] > 0 {
				marks = append(marks, plotter.XY{X: xs[k], Y: float64(k+1) / float64(n)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("cdf %s: %w", s.Name, err)
		}
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, fmt.Errorf("cdf %s: %w", s.Name, err)
		}
		style(i, l, sc)
		layers = append(layers, layer{l, sc})
		p.Legend.Add(s.Name, l, sc)
	}
	for i := len(layers) - 1; i >= 0; i-- { // the first series is drawn last: on top
		p.Add(layers[i].l, layers[i].s)
	}
	return p, nil
}

// Bars draws one bar per (name, value), with the value printed above each bar.
func Bars(title, ylabel string, names []string, values []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	b, err := plotter.NewBarChart(plotter.Values(values), vg.Points(28))
	if err != nil {
		return nil, err
	}
	b.Color = palette[0]
	b.LineStyle.Width = 0
	p.Add(b)
	top := 0.0
	for _, v := range values {
		top = math.Max(top, v)
	}
	var xys plotter.XYLabels
	for i, v := range values {
		xys.XYs = append(xys.XYs, plotter.XY{X: float64(i), Y: v + 0.02*top})
		xys.Labels = append(xys.Labels, fmt.Sprintf("%.3g", v))
	}
	labels, err := plotter.NewLabels(xys)
	if err != nil {
		return nil, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = draw.XCenter
	}
	p.Add(labels)
	p.NominalX(names...)
	p.Y.Min, p.Y.Max = 0, 1.12*top
	return p, nil
}

// Lines draws y against x for each series (xs shared), with a log x axis when logX and a log y
// axis when the values span more than 10x.
func Lines(title, xlabel, ylabel string, xs []float64, series []Series, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Label.Text += " (log scale)"
	}
	var all [][]float64
	positive := true
	for _, s := range series {
		all = append(all, s.Values)
		for _, v := range s.Values {
			positive = positive && v > 0
		}
	}
	if positive && spans(all...) {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += " (log scale)"
	}
	p.Add(plotter.NewGrid())
	type layer struct {
		l *plotter.Line
		s *plotter.Scatter
	}
	var layers []layer
	for i, s := range series {
		if len(s.Values) != len(xs) {
			return nil, fmt.Errorf("series %s has %d points, x has %d", s.Name, len(s.Values), len(xs))
		}
		var pts plotter.XYs
		for k := range xs {
			if !math.IsNaN(s.Values[k]) {
				pts = append(pts, plotter.XY{X: xs[k], Y: s.Values[k]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		style(i, l, sc)
		layers = append(layers, layer{l, sc})
		p.Legend.Add(s.Name, l, sc)
	}
	for i := len(layers) - 1; i >= 0; i-- {
		p.Add(layers[i].l, layers[i].s)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	return p, nil
}

// Save writes p as base.png and base.svg (creating the directory).
func Save(p *plot.Plot, base string) error {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(7*vg.Inch, 4.2*vg.Inch, base+ext); err != nil {
			return fmt.Errorf("save %s%s: %w", base, ext, err)
		}
	}
	return nil
}
