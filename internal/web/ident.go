package web

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
)

// IdentProblem says why s is not an identifier of at most max UTF-16 code units, or ""
// when it is one (DESIGN.md 7a, the one rule for every identifier wherever it travels:
// path, query or body). segment adds the rule of identifiers that appear as a path segment
// (project, release id, adapter version, agent and task of a lock): no "/".
//
// The rule, and why:
//   - 1..max UTF-16 code units: nvarchar(n) counts those, so a character outside the Basic
//     Multilingual Plane counts twice;
//   - valid UTF-8 and no U+FFFD (what a decoder makes of invalid UTF-8), no control
//     characters;
//   - nothing invisible (Invisible): "alpha" and "alpha\u200b" must not be two projects that
//     look like one;
//   - no leading or trailing white space: SQL Server's = ignores trailing spaces, so "k"
//     and "k " would be one key there and two on SQLite;
//   - not "." or "..", which a path or a URL normaliser would resolve away.
func IdentProblem(s string, max int, segment bool) string {
	switch {
	case s == "":
		return "must not be empty"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case UTF16Len(s) > max:
		return fmt.Sprintf("must be at most %d UTF-16 code units", max)
	case s == "." || s == "..":
		return `must not be "." or ".."`
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return "must not contain control characters"
		}
		if Invisible(r) {
			return fmt.Sprintf("must not contain invisible characters (U+%04X)", r)
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return "must not start or end with white space"
	}
	if segment && strings.ContainsRune(s, '/') {
		return `must not contain "/"`
	}
	return ""
}

// Invisible reports whether r draws nothing, or changes how its neighbours draw, where an
// identifier is shown: the format characters (Unicode category Cf: zero-width space and
// joiners, the byte order mark, bidirectional overrides and isolates, the soft hyphen, tag
// characters), the other default-ignorable code points (Hangul fillers, the combining
// grapheme joiner), variation selectors, and the line and paragraph separators.
func Invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector,
		unicode.Zl, unicode.Zp)
}

// ValidIdent reports whether s is an identifier of 1..max UTF-16 code units (IdentProblem).
func ValidIdent(s string, max int) bool { return IdentProblem(s, max, false) == "" }

// PathIdent reads an identifier path parameter of at most max UTF-16 code units; one that
// breaks the identifier rule is 400 naming the parameter.
func PathIdent(c echo.Context, name string, max int) (string, error) {
	// Echo routes on URL.RawPath when the path holds an escape that decoding would change
	// (such as %2F), and then hands the parameters over still escaped.
	raw := c.Param(name)
	if c.Request().URL.RawPath != "" {
		var err error
		if raw, err = url.PathUnescape(raw); err != nil {
			return "", apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: "is not a well-formed path segment"})
		}
	}
	if why := IdentProblem(raw, max, true); why != "" {
		return "", apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: why})
	}
	return raw, nil
}

// Path joins segments into an absolute path, escaping each one, so that an identifier
// holding "?", "#", "%" or a space still names exactly its resource in a Location header.
func Path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}
