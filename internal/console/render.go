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
	"ms": func(p *int64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf("%d", *p)
	},
	"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"list": func(s ...string) []string { return s },
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

func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
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
