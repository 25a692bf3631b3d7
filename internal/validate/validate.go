// Package validate holds the input rules the domain packages and the HTTP base share: the
// identifier rule (DESIGN.md 7a), free text for an nvarchar column, lengths in UTF-16 code
// units, and the field errors they give. It is a leaf: it knows nothing of HTTP.
package validate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/api"
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
	if p, ok := identProblemASCII(s, max, segment); ok {
		return p
	}
	return identProblem(s, max, segment)
}

// identProblemASCII is IdentProblem for a string of ASCII bytes alone (ok false: s has
// another byte), without decoding runes or looking up Unicode tables: every identifier of a
// hot route (a checkpoint's state reference, hash and adapter version) is ASCII in practice,
// and the tables cost about a microsecond a request. No ASCII character is invisible, the
// controls are below 0x20 and 0x7f, and of the white space only ' ' is not a control.
func identProblemASCII(s string, max int, segment bool) (string, bool) {
	control, slash := false, false
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= utf8.RuneSelf:
			return "", false
		case b < 0x20 || b == 0x7f:
			control = true
		case b == '/':
			slash = true
		}
	}
	switch {
	case s == "":
		return "must not be empty", true
	case len(s) > max:
		return fmt.Sprintf("must be at most %d UTF-16 code units", max), true
	case s == "." || s == "..":
		return `must not be "." or ".."`, true
	case control:
		return "must not contain control characters", true
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return "must not start or end with white space", true
	case segment && slash:
		return `must not contain "/"`, true
	}
	return "", true
}

// identProblem is IdentProblem rune by rune.
func identProblem(s string, max int, segment bool) string {
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

// Ident reports whether s is an identifier of 1..max UTF-16 code units (IdentProblem).
func Ident(s string, max int) bool { return IdentProblem(s, max, false) == "" }

// UTF16Len is the length of s in UTF-16 code units, the unit SQL Server's nvarchar(n)
// counts: a character outside the Basic Multilingual Plane counts twice. Each byte of
// invalid UTF-8 counts once (as the U+FFFD it decodes to).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// AppendTooLong adds a field error when v is empty or longer than n UTF-16 code units:
// nvarchar(n) counts those, so a string of n runes outside the Basic Multilingual Plane
// would not fit (SQL Server refuses it with a truncation error, 2628).
func AppendTooLong(fields []api.FieldError, name, v string, n int) []api.FieldError {
	switch {
	case v == "":
		return append(fields, api.FieldError{Field: name, Reason: "is required"})
	case UTF16Len(v) > n:
		return append(fields, api.FieldError{Field: name, Reason: fmt.Sprintf("must be at most %d UTF-16 code units", n)})
	}
	return fields
}

// NotOneOf is the field error of a value that is none of e's wire names: the reason the
// API's decoder gives, for the services that check an enumeration a caller other than
// the decoder may have filled.
func NotOneOf(name string, e api.Enum) api.FieldError {
	return api.FieldError{Field: name, Reason: "must be one of: " + strings.Join(e.EnumValues(), ", ")}
}

// Text reports whether s is free text for an nvarchar(n) column of n = max: valid
// UTF-8, at most max UTF-16 code units, no control characters other than tab and line
// breaks, and no U+FFFD (what the JSON decoder makes of invalid UTF-8). The empty string
// passes; callers that require text check for it.
func Text(s string, max int) bool {
	if !utf8.ValidString(s) || UTF16Len(s) > max {
		return false
	}
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// ErrorCode reports whether s is an error code: 1 to 64 characters of [a-z0-9_.-] (a
// handler's exception type, lowered, or the server's lease_lost, deadline, cancelled).
func ErrorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}
