package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"

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
	"esc":  url.PathEscape,
	"json": func(b []byte) string { return prettyJSON(b) },
	"add":  func(a, b int) int { return a + b },
	"ms": func(p *int64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf("%d", *p)
	},
	"pct":  func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"list": func(s ...string) []string { return s },
	// short is the first 8 characters of an id, enough to tell rows apart (the title and
	// the link carry the whole id).
	"short": func(v fmt.Stringer) string { s := v.String(); return s[:min(8, len(s))] },
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

func prettyJSON(b []byte) string {
	if len(b) == 0 {
		return "—"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
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
