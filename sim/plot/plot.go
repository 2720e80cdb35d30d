// Package plot draws the simulator's figures (JCT CDFs, mean-JCT bars) as PNG and SVG.
package plot

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Series is one named sample (e.g. one policy's JCTs in hours).
type Series struct {
	Name   string
	Values []float64
}

// palette is colour-blind safe (Okabe-Ito).
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
}

// CDF draws the empirical CDF of each series on a log x axis.
func CDF(title, xlabel string, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "fraction of jobs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	// Top left: a CDF reaches there only if most jobs finish within the first decade.
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Add(plotter.NewGrid())
	for i, s := range series {
		xs := slices.Clone(s.Values)
		slices.Sort(xs)
		// thin to at most 400 points so the SVG stays small
		step := max(1, len(xs)/400)
		var pts plotter.XYs
		for k := 0; k < len(xs); k += step {
			if xs[k] > 0 {
				pts = append(pts, plotter.XY{X: xs[k], Y: float64(k+1) / float64(len(xs))})
			}
		}
		if n := len(xs); n > 0 && xs[n-1] > 0 {
			pts = append(pts, plotter.XY{X: xs[n-1], Y: 1})
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("cdf %s: %w", s.Name, err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		if i >= len(palette) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	return p, nil
}

// Bars draws one bar per (name, value).
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
	p.NominalX(names...)
	p.Y.Min = 0
	return p, nil
}

// Lines draws y against x for each series (xs shared), with a log x axis when logX.
func Lines(title, xlabel, ylabel string, xs []float64, series []Series, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if len(s.Values) != len(xs) {
			return nil, fmt.Errorf("series %s has %d points, x has %d", s.Name, len(s.Values), len(xs))
		}
		pts := make(plotter.XYs, len(xs))
		for k := range xs {
			pts[k] = plotter.XY{X: xs[k], Y: s.Values[k]}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = palette[i%len(palette)], palette[i%len(palette)]
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
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
		if err := p.Save(6*vg.Inch, 3.6*vg.Inch, base+ext); err != nil {
			return fmt.Errorf("save %s%s: %w", base, ext, err)
		}
	}
	return nil
}
