package parity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/locksim/locksim/run"
)

// Files a parity folder holds.
const (
	JSONFile  = "parity.json"
	TableFile = "parity.txt"
	ChartFile = "parity.png"
)

// Write writes parity.json, the table and the chart into dir, each
// atomically (a reader never sees half a file).
func (r *Result) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := run.WriteFileAtomic(filepath.Join(dir, JSONFile), append(b, '\n')); err != nil {
		return err
	}
	var t bytes.Buffer
	r.WriteTable(&t)
	if err := run.WriteFileAtomic(filepath.Join(dir, TableFile), t.Bytes()); err != nil {
		return err
	}
	png, err := r.Chart()
	if err != nil {
		return err
	}
	return run.WriteFileAtomic(filepath.Join(dir, ChartFile), png)
}

// Read reads dir/parity.json.
func Read(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, JSONFile), err)
	}
	return &r, nil
}

var (
	simColor  = color.RGBA{86, 119, 180, 255} // blue
	realColor = color.RGBA{200, 30, 30, 255}  // red
)

// Chart draws each cell's unsafe rate in both arms with its 95% Wilson
// interval (horizontal bars, one pair per cell the real arm ran), as PNG.
func (r *Result) Chart() ([]byte, error) {
	var cells []CellResult
	for _, c := range r.Cells {
		if c.NotSupported == "" && c.RealRuns > 0 && c.SimRuns > 0 {
			cells = append(cells, c)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("simulation vs real Redis: runs with a safety violation (TTL %v)", durationOf(r.TTLNS))
	p.X.Label.Text = "unsafe runs, % (95% Wilson interval)"
	p.X.Min, p.X.Max = 0, 100
	n := len(cells)
	names := make([]string, n)
	simV, realV := make(plotter.Values, n), make(plotter.Values, n)
	simE, realE := make(errPoints, n), make(errPoints, n)
	for i, c := range cells {
		j := n - 1 - i // first cell on top
		names[j] = c.Scenario + " × " + c.Lock
		if !c.Agree {
			names[j] += " (!)"
		}
		simV[j] = 100 * float64(c.SimUnsafe) / float64(c.SimRuns)
		realV[j] = 100 * float64(c.RealUnsafe) / float64(c.RealRuns)
		simE[j] = errPoint{x: simV[j], y: float64(j) - 0.18, lo: simV[j] - 100*c.SimCI[0], hi: 100*c.SimCI[1] - simV[j]}
		realE[j] = errPoint{x: realV[j], y: float64(j) + 0.18, lo: realV[j] - 100*c.RealCI[0], hi: 100*c.RealCI[1] - realV[j]}
	}
	if n > 0 {
		w := vg.Points(7)
		sb, err := plotter.NewBarChart(simV, w)
		if err != nil {
			return nil, err
		}
		sb.Horizontal, sb.Color, sb.Offset, sb.LineStyle.Width = true, simColor, -w/2, 0
		rb, err := plotter.NewBarChart(realV, w)
		if err != nil {
			return nil, err
		}
		rb.Horizontal, rb.Color, rb.Offset, rb.LineStyle.Width = true, realColor, w/2, 0
		se, err := plotter.NewXErrorBars(simE)
		if err != nil {
			return nil, err
		}
		re, err := plotter.NewXErrorBars(realE)
		if err != nil {
			return nil, err
		}
		p.Add(sb, rb, se, re)
		p.Legend.Add("simulator", sb)
		p.Legend.Add("real Redis", rb)
		p.Legend.Top = true
		p.NominalY(names...)
	}
	height := vg.Length(max(n, 2))*vg.Points(22) + vg.Inch
	c := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, height), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	png := vgimg.PngCanvas{Canvas: c}
	if _, err := png.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type errPoint struct{ x, y, lo, hi float64 }

type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) XError(i int) (float64, float64) { return e[i].lo, e[i].hi }

func durationOf(ns int64) string { return fmt.Sprint(time.Duration(ns)) }
