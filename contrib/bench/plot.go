package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one latency distribution in the figure.
type series struct {
	name    string
	samples []float64
}

// plot draws up to five panels: box plots of the single-container latencies
// (linear, where hutch and its baselines are comparable), the cumulative
// distributions of every latency measured (log scale, so that the
// concurrent run fits beside the single ones), the concurrent containers'
// latencies by when they started, the pull times and the build times.
func (r *Results) plot(path string) error {
	single := []series{
		{"seed flow (API)", r.Seed.Samples},
		{"runc run", r.Runc.Samples},
		{"docker run", r.DockerRun.Samples},
	}
	all := append(slices.Clone(single),
		series{"create…remove alone", r.Load.Single.Samples},
		series{fmt.Sprintf("%d concurrent", r.Load.Clients), r.Load.Latency.Samples},
	)
	pull := []series{
		{"hutch pull", seconds(r.Pull.Hutch.Samples)},
		{"gzip -dc | tar -x", seconds(r.Pull.Baseline.Samples)},
	}
	b := r.Build
	build := []series{
		{"bkctl→\nhutch\ncold", seconds(b.BkctlHutch.Cold.Wall.Samples)},
		{"buildctl→\nbuildkitd\ncold", seconds(b.Buildkitd.Cold.Wall.Samples)},
		{"buildx→\nhutch\ncold", seconds(b.Hutch.Cold.Wall.Samples)},
		{"buildx→\nbuildkitd\ncold", seconds(b.BuildxBuildkitd.Cold.Wall.Samples)},
		{"bkctl→\nhutch\ncached", seconds(b.BkctlHutch.Cached.Wall.Samples)},
		{"buildctl→\nbuildkitd\ncached", seconds(b.Buildkitd.Cached.Wall.Samples)},
		{"buildx→\nhutch\ncached", seconds(b.Hutch.Cached.Wall.Samples)},
		{"buildx→\nbuildkitd\ncached", seconds(b.BuildxBuildkitd.Cached.Wall.Samples)},
	}
	var panels []*plot.Plot
	for _, mk := range []func() (*plot.Plot, error){
		func() (*plot.Plot, error) { return boxPlot("single container (ms)", "ms", single) },
		func() (*plot.Plot, error) { return cdfPlot("latency distributions (CDF)", all) },
		func() (*plot.Plot, error) { return burstPlot(&r.Load) },
		func() (*plot.Plot, error) { return boxPlot("large image pull (s)", "s", pull) },
		func() (*plot.Plot, error) { return boxPlot("3-stage build (s)", "s", build) },
	} {
		p, err := mk()
		if err != nil {
			return err
		}
		if p != nil {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil
	}
	// Room for the title when there is one panel (-only build).
	w, h := vg.Length(max(len(panels), 2))*5*vg.Inch, 5.5*vg.Inch
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	title := fmt.Sprintf("hutch bench %s — %s", r.Started.Format("2006-01-02 15:04 UTC"), r.Host["hutch"])
	dc.FillText(draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(13)), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}, vg.Point{X: w / 2, Y: h - vg.Points(4)}, title)
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(22))
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Points(24), PadY: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(12), PadBottom: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, body)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func seconds(ms []float64) []float64 {
	out := make([]float64, len(ms))
	for i, v := range ms {
		out[i] = v / 1000
	}
	return out
}

// boxPlot draws one box per series that has samples (nil: none has).
func boxPlot(title, unit string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Min = 0
	var names []string
	// Narrower boxes when there are many (the build's eight).
	width := vg.Points(min(40, 240/float64(len(ss))))
	for i, s := range ss {
		if len(s.samples) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(width, float64(len(names)), plotter.Values(s.samples))
		if err != nil {
			return nil, err
		}
		b.FillColor = lighter(plotutil.Color(i))
		p.Add(b)
		names = append(names, s.name)
	}
	if len(names) == 0 {
		return nil, nil
	}
	p.NominalX(names...)
	p.Y.Tick.Marker = linearTicks{}
	p.Add(plotter.NewGrid())
	return p, nil
}

// cdfPlot draws the empirical cumulative distribution of each series on a
// log time axis (nil: no series has samples).
func cdfPlot(title string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ms (log scale)"
	p.Y.Label.Text = "fraction of runs ≤ x"
	p.X.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = 0, 1
	lo, hi := math.Inf(1), 0.0
	for i, s := range ss {
		if len(s.samples) == 0 {
			continue
		}
		v := slices.Clone(s.samples)
		slices.Sort(v)
		pts := make(plotter.XYs, 0, 2*len(v))
		for j, x := range v {
			x = math.Max(x, 0.001)
			pts = append(pts, plotter.XY{X: x, Y: float64(j) / float64(len(v))}, plotter.XY{X: x, Y: float64(j+1) / float64(len(v))})
		}
		lo, hi = math.Min(lo, v[0]), math.Max(hi, v[len(v)-1])
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s, median %.1f", s.name, quantile(v, 0.5)), l)
	}
	if hi == 0 {
		return nil, nil
	}
	// The axis runs on past the slowest sample, so that the legend has
	// the bottom right to itself.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(4), vg.Points(6)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.X.Min, p.X.Max = lo*0.8, hi*12
	p.X.Tick.Marker = plot.ConstantTicks(ticks125(p.X.Min, p.X.Max))
	p.Add(plotter.NewGrid())
	return p, nil
}

// burstPlot draws each concurrent container's latency at the time its
// create began, with the goal (10× the single-container median) and the
// p99 (nil: no start times, as in results of bench runs before them).
func burstPlot(l *Load) (*plot.Plot, error) {
	if _, _, _, ok := l.slowest(); !ok {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d concurrent containers (%d bursts) by start", len(l.StartsMs), l.bursts())
	p.X.Label.Text = "create began (s into its burst)"
	p.Y.Label.Text = "create…remove (ms)"
	p.Y.Min = 0
	pts := make(plotter.XYs, len(l.StartsMs))
	for i, t := range l.StartsMs {
		pts[i] = plotter.XY{X: t / 1000, Y: l.Latency.Samples[i]}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = plotutil.Color(4) // the concurrent run's colour in the CDF
	sc.GlyphStyle.Radius = vg.Points(2)
	p.Add(sc)
	end := 0.0
	for _, pt := range pts {
		end = math.Max(end, pt.X)
	}
	hline := func(y float64, dashed bool, i int, name string) error {
		ln, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: end, Y: y}})
		if err != nil {
			return err
		}
		ln.Color = plotutil.Color(i)
		if dashed {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(ln)
		p.Legend.Add(name, ln)
		return nil
	}
	if l.Single.Median > 0 {
		goal := 10 * l.Single.Median
		if err := hline(goal, true, 0, fmt.Sprintf("10× alone (goal) %.0f", goal)); err != nil {
			return nil, err
		}
		p.Y.Max = math.Max(p.Y.Max, goal*1.15)
	}
	if err := hline(l.Latency.P99, false, 4, fmt.Sprintf("p99 %.0f", l.Latency.P99)); err != nil {
		return nil, err
	}
	p.Legend.Top = false
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Y.Tick.Marker = linearTicks{}
	p.X.Tick.Marker = linearTicks{}
	p.Add(plotter.NewGrid())
	return p, nil
}

// ticks125 labels 1, 2, 5 × 10^k between lo and hi, the other integers
// of each decade get an unlabelled tick.
func ticks125(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1.0; m < 10; m++ {
			v := m * base
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = fmt.Sprint(round3(v))
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
	}
	return ts
}

// linearTicks labels about eight round values (1, 2 or 5 × 10^k apart),
// more than gonum's default gives.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(round3(v))})
	}
	return ts
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 2*255) / 3) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 255}
}
