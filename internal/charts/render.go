package charts

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is a drawing of a fixed size: a chart or a timeline.
type Figure interface {
	// Size is the figure's width and height.
	Size() (w, h vg.Length)
	// Draw draws the figure on c, which has the figure's size.
	Draw(c draw.Canvas)
}

// PNGDPI is the resolution of PNG output.
const PNGDPI = 110

// Formats are the output formats Encode knows.
var Formats = []string{"png", "svg"}

// Encode writes f to w as "png" or "svg". SVG carries its fonts (embedded
// as data), so it renders the same without them installed.
func Encode(w io.Writer, f Figure, format string) error {
	width, height := f.Size()
	switch format {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(PNGDPI), vgimg.UseBackgroundColor(color.White))
		f.Draw(draw.New(c))
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
		return err
	case "svg":
		c := vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
		f.Draw(draw.New(c))
		_, err := c.WriteTo(w)
		return err
	}
	return fmt.Errorf("reports: unknown format %q (one of: %s)", format, strings.Join(Formats, ", "))
}

// Save writes f to path in the format its extension names (.png, .svg).
// The file is written to a temporary name beside path and renamed, so a
// reader never sees half a picture.
func Save(f Figure, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	var buf bytes.Buffer
	if err := Encode(&buf, f, format); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

// SaveAll writes f as base.png and base.svg and returns the two paths.
func SaveAll(f Figure, base string) ([]string, error) {
	var paths []string
	for _, format := range Formats {
		p := base + "." + format
		if err := Save(f, p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// plotFigure is a gonum plot at a fixed size, with its title and legend
// drawn above the plot area (a legend inside it would hide data at the
// top of the range).
type plotFigure struct {
	p      *plot.Plot
	w, h   vg.Length
	title  string
	legend []legendItem
}

// legendItem is one legend entry: a label and what its thumbnail shows.
type legendItem struct {
	label  string
	thumbs []plot.Thumbnailer
}

func (f plotFigure) Size() (vg.Length, vg.Length) { return f.w, f.h }

const (
	titleSize   = 12 // points
	legendSize  = 10 // points
	legendRow   = 15 // points per legend row
	legendThumb = 18 // points
)

func (f plotFigure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	top := c.Max.Y - vg.Points(4)
	if f.title != "" {
		st := textStyle(vg.Points(titleSize), color.Black)
		st.XAlign, st.YAlign = draw.XCenter, draw.YTop
		c.FillText(st, vg.Point{X: c.Center().X, Y: top}, f.title)
		top -= st.Height(f.title) + vg.Points(4)
	}
	if len(f.legend) > 0 {
		// Entries in rows, left to right, wrapping at the figure's width.
		st := textStyle(vg.Points(legendSize), color.Black)
		st.YAlign = draw.YCenter
		left, right := c.Min.X+vg.Points(40), c.Max.X-vg.Points(10)
		x, y := left, top-vg.Points(legendRow)/2
		for _, e := range f.legend {
			w := vg.Points(legendThumb+5) + st.Width(e.label) + vg.Points(16)
			if x+w > right && x > left {
				x, y = left, y-vg.Points(legendRow)
			}
			tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - vg.Points(5)}, Max: vg.Point{X: x + vg.Points(legendThumb), Y: y + vg.Points(5)}}}
			for _, t := range e.thumbs {
				t.Thumbnail(&tc)
			}
			c.FillText(st, vg.Point{X: x + vg.Points(legendThumb+5), Y: y}, e.label)
			x += w
		}
		top = y - vg.Points(legendRow)/2 - vg.Points(2)
	}
	f.p.Title.Text = ""
	c.Max.Y = top
	f.p.Draw(c)
}

// Palette is the series colours, in order (Okabe-Ito, readable by the
// colour-blind), then repeated darker.
var Palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // bluish green
	{204, 121, 167, 255}, // reddish purple
	{230, 159, 0, 255},   // orange
	{86, 180, 233, 255},  // sky blue
	{120, 120, 120, 255}, // grey
	{240, 228, 66, 255},  // yellow
}

func paletteColor(i int) color.RGBA {
	c := Palette[i%len(Palette)]
	if i >= len(Palette) {
		c.R, c.G, c.B = c.R*2/3, c.G*2/3, c.B*2/3
	}
	return c
}

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

// sans is the one typeface of every figure (one font to embed in SVG).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// textStyle is a plain text style at size points.
func textStyle(size vg.Length, clr color.Color) text.Style {
	return text.Style{
		Color:   clr,
		Font:    font.From(sans, size),
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot is a plot with the package's house style.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = sans.Typeface, sans.Variant
	}
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	return p
}
