package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// page is what every template gets.
type page struct {
	Title string
	// Nav is the section the page belongs to (the highlighted tab).
	Nav    string
	Tenant string
	KeyID  string
	CSRF   string
	Data   any
}

type errorView struct{ Message string }

var funcs = template.FuncMap{
	"ts": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2006-01-02 15:04:05.000")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05.000")
		}
		return "—"
	},
	"dur": fmtDuration,
	"str": func(p *string) string {
		if p == nil {
			return "—"
		}
		return *p
	},
	"esc":   url.PathEscape,
	"json":  boundedJSON,
	"add":   func(a, b int) int { return a + b },
	"add64": func(a, b int64) int64 { return a + b },
	"ms":    fmtMs,
	"pct":   func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"list":  func(s ...string) []string { return s },
	// short is the last 8 characters of an id, enough to tell rows apart (the title and the
	// link carry the whole id): a UUIDv7 starts with its time, so rows made in the same
	// minutes share their first characters, while its tail is random.
	"short": func(v fmt.Stringer) string { s := v.String(); return s[max(0, len(s)-8):] },
	// plural is "1 attempt", "2 attempts".
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	},
}

// fmtDuration is how every duration in the console reads: the two largest units a person
// uses ("250 ms", "17.3 s", "2 min 5 s", "1 h 3 min", "2 d 4 h"), never raw milliseconds.
// Seconds under a minute keep one decimal and drop it when it is zero ("10 s"); past a
// minute the smaller unit is whole and left out when it is zero ("2 min", "1 h").
func fmtDuration(d time.Duration) string {
	two := func(n int64, big string, m int64, small string) string {
		if m == 0 {
			return fmt.Sprintf("%d %s", n, big)
		}
		return fmt.Sprintf("%d %s %d %s", n, big, m, small)
	}
	switch {
	case d <= 0:
		return "0 s"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		// Tenths of a second, rounded; 59.96 s reads "1 min", not "60 s".
		tenths := (d + 50*time.Millisecond) / (100 * time.Millisecond)
		if tenths >= 600 {
			return "1 min"
		}
		if tenths%10 == 0 {
			return fmt.Sprintf("%d s", tenths/10)
		}
		return fmt.Sprintf("%d.%d s", tenths/10, tenths%10)
	case d < time.Hour:
		s := int64((d + time.Second/2) / time.Second)
		if s >= 3600 {
			return "1 h"
		}
		return two(s/60, "min", s%60, "s")
	case d < 24*time.Hour:
		m := int64((d + time.Minute/2) / time.Minute)
		if m >= 24*60 {
			return "1 d"
		}
		return two(m/60, "h", m%60, "min")
	default:
		h := int64((d + time.Hour/2) / time.Hour)
		return two(h/24, "d", h%24, "h")
	}
}

// fmtMs is fmtDuration for the API's millisecond figures (percentiles), "—" for none.
func fmtMs(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmtDuration(time.Duration(*p) * time.Millisecond)
}

// A stored JSON value (a run's input, a decision's options or answer) is shown compact, at
// most maxShownBytes of it, with anything nested deeper than maxShownDepth elided: a runtime
// key may store a value of 1 MiB nested 10,000 deep, and indenting it costs the square of
// its depth. The page links to the API for the whole value.
const (
	maxShownBytes = 8 << 10
	maxShownDepth = 16
)

// shownJSON is a stored JSON value as a page shows it.
type shownJSON struct {
	Text string
	// Cut says the value is longer or deeper than Text shows.
	Cut bool
}

// boundedJSON renders b compact, cut after maxShownBytes and with arrays and objects past
// maxShownDepth shown as […] and {…}: one pass, whatever b holds. Stored values were
// decoded before they were stored; anything else would be shown as text, cut the same way.
func boundedJSON(b []byte) shownJSON {
	if len(b) == 0 {
		return shownJSON{Text: "—"}
	}
	var out []byte
	var cut bool
	depth, skipTo := 0, -1 // skipTo: the depth whose closing bracket ends an elided value
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		} else {
			switch ch {
			case ' ', '\t', '\n', '\r':
				continue
			case '"':
				inString = true
			case '{', '[':
				depth++
				if skipTo < 0 && depth > maxShownDepth {
					skipTo, cut = depth, true
					out = append(out, ch, 0xE2, 0x80, 0xA6) // "…"
					continue
				}
			case '}', ']':
				if depth == skipTo {
					skipTo = -1
					depth--
					out = append(out, ch)
					continue
				}
				depth--
			}
		}
		if skipTo >= 0 {
			continue
		}
		if len(out) >= maxShownBytes {
			// Cut on a character boundary.
			for len(out) > 0 {
				if r, size := utf8.DecodeLastRune(out); r != utf8.RuneError || size != 1 {
					break
				}
				out = out[:len(out)-1]
			}
			return shownJSON{Text: string(out) + " …", Cut: true}
		}
		out = append(out, ch)
	}
	return shownJSON{Text: string(out), Cut: cut}
}

// parsePages parses each page with the layout; partials ("_*.html") are shared by all.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	var shared []string
	for _, n := range names {
		if b := path.Base(n); strings.HasPrefix(b, "_") {
			shared = append(shared, n)
		}
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		b := path.Base(n)
		if strings.HasPrefix(b, "_") {
			continue
		}
		t := template.Must(template.New(b).Funcs(funcs).ParseFS(templateFS, append([]string{n}, shared...)...))
		pages[strings.TrimSuffix(b, ".html")] = t
	}
	return pages
}

// render writes a page with the layout, or only its "live" block for an htmx refresh.
func (c *console) render(ctx echo.Context, status int, name string, p page) error {
	return c.renderTemplate(ctx, status, name, "layout", p)
}

func (c *console) renderTemplate(ctx echo.Context, status int, name, block string, p page) error {
	t, ok := c.pages[name]
	if !ok {
		return fmt.Errorf("console: no template %q", name)
	}
	if s := sessionOf(ctx); s.TenantID != "" {
		p.Tenant, p.KeyID, p.CSRF = s.TenantID, s.KeyID, s.csrf()
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, p); err != nil {
		return fmt.Errorf("console: render %s: %w", name, err)
	}
	return ctx.HTMLBlob(status, buf.Bytes())
}
