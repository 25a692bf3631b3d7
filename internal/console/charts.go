package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// Charts are drawn on the server as SVG: no chart framework, nothing to run in the
// browser, and the page's Content-Security-Policy holds (colours come from the stylesheet
// through class names, never inline styles). Each chart scales to its box (viewBox, width
// 100%), so it reads at 1280 px and at 390 px; its numbers are in a table beside it, for
// screen readers and for anyone who wants the figures, so the SVG itself is one image
// with a label, and each of its bars is a link to the list it summarises.

// chartPart is one coloured part of a bar: its series name (the CSS class c-<name>) and value.
type chartPart struct {
	Name  string
	Value float64
}

// chartBar is one bar: its label (a time or a group), its parts, a link and a tooltip.
type chartBar struct {
	Label string
	Parts []chartPart
	Href  string
	// Rows is how many rows the link lists (its data-rows, which the browser test compares
	// with the list); a bar whose parts are counts lists their total.
	Rows int64
	// Format writes a part's value in the tooltip (a duration); nil writes the number.
	Format func(float64) string
}

func (b chartBar) total() float64 {
	var t float64
	for _, p := range b.Parts {
		t += p.Value
	}
	return t
}

func (b chartBar) title() string {
	var parts []string
	for _, p := range b.Parts {
		if p.Value != 0 {
			v := fmtNum(p.Value)
			if b.Format != nil {
				v = b.Format(p.Value)
			}
			parts = append(parts, fmt.Sprintf("%s %s", v, p.Name))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return b.Label + ": " + strings.Join(parts, ", ")
}

func fmtNum(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

const (
	chartW      = 600
	chartH      = 170
	chartLeft   = 52
	chartBottom = 20
	barRowH     = 22
	barLabelW   = 130
	rowsW       = 420
	// rowLabelRunes is as much of a row's label as fits left of its bar without running
	// off the chart's left edge; the bar's tooltip and the table under it hold the whole.
	rowLabelRunes = 15
)

// columns draws stacked vertical bars, one per bar, left to right (a time series): the
// y axis shows the largest total, the x axis the first and last labels.
func columns(label string, bars []chartBar, firstLabel, lastLabel string) template.HTML {
	var peak float64
	for _, b := range bars {
		peak = max(peak, b.total())
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="xMidYMid meet">`,
		chartW, chartH, template.HTMLEscapeString(label))
	plotW, plotH := float64(chartW-chartLeft-4), float64(chartH-chartBottom-8)
	fmt.Fprintf(&sb, `<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, chartLeft, 8+plotH, chartW-4, 8+plotH)
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="14" text-anchor="end">%s</text>`, chartLeft-4, fmtNum(peak))
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%.1f" text-anchor="end">0</text>`, chartLeft-4, 8+plotH)
	if len(bars) > 0 && peak > 0 {
		w := plotW / float64(len(bars))
		for i, b := range bars {
			x := float64(chartLeft) + float64(i)*w
			y := 8 + plotH
			sb.WriteString(b.open())
			// A transparent full-height target keeps even an empty bucket's link clickable.
			fmt.Fprintf(&sb, `<rect class="hit" x="%.2f" y="8" width="%.2f" height="%.1f"/>`, x, w, plotH)
			for _, p := range b.Parts {
				if p.Value <= 0 {
					continue
				}
				h := p.Value / peak * plotH
				y -= h
				fmt.Fprintf(&sb, `<rect class="c-%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`,
					template.HTMLEscapeString(p.Name), x+w*0.08, y, w*0.84, h)
			}
			sb.WriteString(b.close())
		}
	}
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d">%s</text>`, chartLeft, chartH-4, template.HTMLEscapeString(firstLabel))
	fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-4, chartH-4, template.HTMLEscapeString(lastLabel))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// rows draws stacked horizontal bars, one row per bar (groups, targets, kinds), each with
// its label on the left and its total on the right.
func rows(label string, bars []chartBar) template.HTML {
	var peak float64
	for _, b := range bars {
		peak = max(peak, b.total())
	}
	h := max(len(bars), 1)*barRowH + 8
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart rows" viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="xMinYMid meet">`,
		rowsW, h, template.HTMLEscapeString(label))
	plotW := float64(rowsW - barLabelW - 50)
	for i, b := range bars {
		y := 4 + i*barRowH
		sb.WriteString(b.open())
		fmt.Fprintf(&sb, `<rect class="hit" x="0" y="%d" width="%d" height="%d"/>`, y, rowsW, barRowH)
		fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, barLabelW-6, y+15,
			template.HTMLEscapeString(clip(b.Label, rowLabelRunes)))
		x := float64(barLabelW)
		for _, p := range b.Parts {
			if p.Value <= 0 || peak <= 0 {
				continue
			}
			w := p.Value / peak * plotW
			fmt.Fprintf(&sb, `<rect class="c-%s" x="%.2f" y="%d" width="%.2f" height="%d"/>`,
				template.HTMLEscapeString(p.Name), x, y+3, w, barRowH-6)
			x += w
		}
		fmt.Fprintf(&sb, `<text class="tick" x="%.2f" y="%d">%s</text>`, x+4, y+15, fmtNum(b.total()))
		sb.WriteString(b.close())
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// pairedRows draws one row per bar with each of its parts as a bar of its own from zero,
// one under the other, its value written after it by format. It is for series that are not
// parts of a whole (p50 and p95 of one group): stacked, the second colour would show p95
// minus p50 and change meaning along the bar; side by side each colour is one series,
// named in the legend.
func pairedRows(label string, bars []chartBar, format func(float64) string) template.HTML {
	const subH = 16
	var peak float64
	series := 1
	for _, b := range bars {
		series = max(series, len(b.Parts))
		for _, p := range b.Parts {
			peak = max(peak, p.Value)
		}
	}
	rowH := series*subH + 8
	h := max(len(bars), 1)*rowH + 8
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="chart rows paired" viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="xMinYMid meet">`,
		rowsW, h, template.HTMLEscapeString(label))
	plotW := float64(rowsW - barLabelW - 70)
	for i, b := range bars {
		y := 4 + i*rowH
		sb.WriteString(b.open())
		fmt.Fprintf(&sb, `<rect class="hit" x="0" y="%d" width="%d" height="%d"/>`, y, rowsW, rowH)
		fmt.Fprintf(&sb, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, barLabelW-6, y+rowH/2+4,
			template.HTMLEscapeString(clip(b.Label, rowLabelRunes)))
		for j, p := range b.Parts {
			py := y + 4 + j*subH
			w := 0.0
			if peak > 0 && p.Value > 0 {
				w = p.Value / peak * plotW
			}
			fmt.Fprintf(&sb, `<rect class="c-%s" x="%d" y="%d" width="%.2f" height="%d"/>`,
				template.HTMLEscapeString(p.Name), barLabelW, py, w, subH-2)
			fmt.Fprintf(&sb, `<text class="tick val" x="%.2f" y="%d">%s</text>`, float64(barLabelW)+w+4, py+subH-3,
				template.HTMLEscapeString(format(p.Value)))
		}
		sb.WriteString(b.close())
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

// sparkline draws stacked columns without axes or labels, for the overview.
func sparkline(label string, bars []chartBar) template.HTML {
	var peak float64
	for _, b := range bars {
		peak = max(peak, b.total())
	}
	const w, h = 240, 40
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="spark" viewBox="0 0 %d %d" role="img" aria-label="%s" preserveAspectRatio="none">`,
		w, h, template.HTMLEscapeString(label))
	fmt.Fprintf(&sb, `<line class="axis" x1="0" y1="%d" x2="%d" y2="%d"/>`, h-1, w, h-1)
	if len(bars) > 0 && peak > 0 {
		bw := float64(w) / float64(len(bars))
		for i, b := range bars {
			y := float64(h - 1)
			for _, p := range b.Parts {
				if p.Value <= 0 {
					continue
				}
				ph := p.Value / peak * float64(h-3)
				y -= ph
				fmt.Fprintf(&sb, `<rect class="c-%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s</title></rect>`,
					template.HTMLEscapeString(p.Name), float64(i)*bw+bw*0.1, y, bw*0.8, ph, template.HTMLEscapeString(b.title()))
			}
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// bucketLabel is how a bucket's start reads on an axis or in a table: the date only for
// daily buckets, the time for the others (with the date when the window spans days).
func bucketLabel(t time.Time, daily, withDate bool) string {
	switch {
	case daily:
		return t.UTC().Format("2006-01-02")
	case withDate:
		return t.UTC().Format("01-02 15:04")
	}
	return t.UTC().Format("15:04")
}

// open starts a bar's element: a link to the rows it counts, or a plain group when no list
// shows exactly those rows (the "other" group).
func (b chartBar) open() string {
	title := `<title>` + template.HTMLEscapeString(b.title()) + `</title>`
	if b.Href == "" {
		return `<g>` + title
	}
	return fmt.Sprintf(`<a href="%s" data-rows="%d">`, template.HTMLEscapeString(b.Href), b.Rows) + title
}

func (b chartBar) close() string {
	if b.Href == "" {
		return `</g>`
	}
	return `</a>`
}
