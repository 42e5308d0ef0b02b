package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// The console's charts are inline SVG drawn on the server: no script, no
// library, readable without JavaScript, and each one an image with a text
// alternative (role="img", a <title> and a <desc> saying what it shows).

// barSeries is one colour of a bar chart.
type barSeries struct {
	Name   string
	Class  string // CSS class of its bars (the colour)
	Values []float64
}

// barChart is a chart of vertical bars, stacked when it has several series.
type barChart struct {
	ID, Title, Desc string
	Labels          []string // one per bar
	Series          []barSeries
	// Unit formats a value for the axis and the tooltips.
	Unit func(float64) string
}

const (
	chartW, chartH       = 640.0, 220.0
	chartLeft, chartBase = 48.0, 190.0
	chartTop             = 12.0
)

func esc(s string) string { return template.HTMLEscapeString(s) }

func plainNumber(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// svgOpen starts a chart's SVG with its text alternative; it takes the
// width of its box.
func svgOpen(b *strings.Builder, id, title, desc string, w, h float64) {
	fmt.Fprintf(b, `<svg class="chart" id="%s" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="%s-t %s-d" preserveAspectRatio="xMidYMid meet">`, esc(id), w, h, esc(id), esc(id))
	fmt.Fprintf(b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
}

// svgOpenSized is svgOpen for a drawing of its own size (w × h px, scaled
// down to fit its box).
func svgOpenSized(b *strings.Builder, id, title, desc string, w, h float64) {
	fmt.Fprintf(b, `<svg class="drawing" id="%s" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="%s-t %s-d">`, esc(id), w, h, w, h, esc(id), esc(id))
	fmt.Fprintf(b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
}

// SVG draws the chart.
func (c barChart) SVG() template.HTML {
	unit := c.Unit
	if unit == nil {
		unit = plainNumber
	}
	n := len(c.Labels)
	var b strings.Builder
	svgOpen(&b, c.ID, c.Title, c.Desc, chartW, chartH)
	top := 0.0
	for i := range n {
		sum := 0.0
		for _, s := range c.Series {
			if i < len(s.Values) {
				sum += s.Values[i]
			}
		}
		top = max(top, sum)
	}
	top = niceMax(top)
	plotH := chartBase - chartTop
	// Axis: the top, the middle and zero, with faint grid lines.
	for _, f := range []float64{0, 0.5, 1} {
		y := chartBase - f*plotH
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, chartLeft, chartW, y, y)
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, chartLeft-6, y+4, esc(unit(f*top)))
	}
	if n > 0 {
		slot := (chartW - chartLeft) / float64(n)
		bw := math.Max(1, slot*0.7)
		for i := range n {
			x := chartLeft + float64(i)*slot + (slot-bw)/2
			y := chartBase
			for _, s := range c.Series {
				v := 0.0
				if i < len(s.Values) {
					v = s.Values[i]
				}
				if v <= 0 {
					continue
				}
				h := v / top * plotH
				y -= h
				fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s, %s: %s</title></rect>`,
					esc(s.Class), x, y, bw, h, esc(c.Labels[i]), esc(s.Name), esc(unit(v)))
			}
		}
		// The first, middle and last labels (more would not fit).
		for k, i := range labelIndexes(n) {
			x, anchor := chartLeft+(float64(i)+0.5)*slot, "middle"
			switch {
			case n > 1 && k == 0:
				x, anchor = chartLeft, "start"
			case n > 1 && i == n-1:
				x, anchor = chartW, "end"
			}
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.0f" text-anchor="%s">%s</text>`, x, chartBase+18, anchor, esc(shortLabel(c.Labels[i])))
		}
	}
	b.WriteString(`</svg>`)
	if len(c.Series) > 1 {
		b.WriteString(`<p class="legend">`)
		for _, s := range c.Series {
			fmt.Fprintf(&b, `<span><i class="swatch %s" aria-hidden="true"></i>%s</span> `, esc(s.Class), esc(s.Name))
		}
		b.WriteString(`</p>`)
	}
	return template.HTML(b.String()) //nolint:gosec // G203: every text in it is escaped above
}

func labelIndexes(n int) []int {
	switch {
	case n <= 0:
		return nil
	case n <= 3:
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return []int{0, n / 2, n - 1}
}

// shortLabel keeps a date label short ("2026-03-01" → "03-01").
func shortLabel(s string) string {
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		return s[5:]
	}
	return s
}

// hbar is one row of a horizontal bar chart.
type hbar struct {
	Label string
	Value float64
}

// hbarChart draws one horizontal bar per row (the runs per automation).
func hbarChart(id, title, desc string, rows []hbar, unit func(float64) string) template.HTML {
	if unit == nil {
		unit = plainNumber
	}
	const rowH, labelW, w = 26.0, 200.0, 640.0
	h := math.Max(rowH, float64(len(rows))*rowH+8)
	var b strings.Builder
	svgOpen(&b, id, title, desc, w, h)
	top := 0.0
	for _, r := range rows {
		top = max(top, r.Value)
	}
	top = niceMax(top)
	for i, r := range rows {
		y := 4 + float64(i)*rowH
		bw := r.Value / top * (w - labelW - 60)
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, labelW-8, y+16, esc(ellipsis(r.Label, 28)))
		fmt.Fprintf(&b, `<rect class="bar-a" x="%.0f" y="%.1f" width="%.1f" height="%.0f"><title>%s: %s</title></rect>`, labelW, y+3, bw, rowH-8, esc(r.Label), esc(unit(r.Value)))
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f">%s</text>`, labelW+bw+6, y+16, esc(unit(r.Value)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: every text in it is escaped above
}

func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ringChart draws a share (0–100 %) as a ring with the figure inside.
func ringChart(id, title, desc string, percent float64) template.HTML {
	const size, r = 160.0, 62.0
	percent = math.Max(0, math.Min(100, percent))
	circ := 2 * math.Pi * r
	var b strings.Builder
	svgOpen(&b, id, title, desc, size, size)
	fmt.Fprintf(&b, `<circle class="ring-bg" cx="80" cy="80" r="%.0f"/>`, r)
	fmt.Fprintf(&b, `<circle class="ring" cx="80" cy="80" r="%.0f" stroke-dasharray="%.2f %.2f" transform="rotate(-90 80 80)"/>`, r, circ*percent/100, circ)
	fmt.Fprintf(&b, `<text class="ring-figure" x="80" y="88" text-anchor="middle">%.0f%%</text>`, percent)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // G203: every text in it is escaped above
}
