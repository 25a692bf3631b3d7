// Package jcs is the JSON Canonicalization Scheme (RFC 8785, "JCS"): one canonical text per
// JSON value. A release's manifest hash is the SHA-256 of the canonical form of its
// contentRefs, and a choice decision's answer matches an option when their canonical forms
// are equal. No served Go module implements it, and it is small, so it is written here:
//
//   - the input must be I-JSON (RFC 7493): valid UTF-8, no duplicate member names (after
//     unescaping), no lone surrogates, numbers within IEEE 754 double range; anything else
//     is refused, since it has no canonical form;
//   - object members are sorted by their names as UTF-16 code units, recursively; array
//     order is kept;
//   - no whitespace between tokens;
//   - strings are written with the minimal escaping of ECMAScript's JSON.stringify: \" and
//     \\, \b \t \n \f \r, \u00xx (lowercase hex) for the other controls below U+0020, and
//     every other character as itself in UTF-8 (no \u escapes, no escaping of '/', '<', DEL
//     or U+2028);
//   - numbers are parsed as doubles and written as ECMAScript's Number::toString does;
//   - true, false and null as themselves.
//
// Noncharacters (U+FFFE, U+FDD0, ...) are accepted and kept: RFC 7493 discourages them but
// the reference implementations pass them through, and refusing what a runtime's JCS
// library hashes would only produce spurious mismatches.
package jcs

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxJSONDepth is the deepest nesting of arrays and objects Canonicalize accepts.
const MaxJSONDepth = 1000

// CanonicalError says why a text has no canonical form: it is not JSON, or not I-JSON.
type CanonicalError struct {
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	Reason string
}

func (e *CanonicalError) Error() string {
	return fmt.Sprintf("not canonicalizable JSON at byte %d: %s", e.Offset, e.Reason)
}

// Canonicalize returns the RFC 8785 canonical form of the JSON text data, or a
// *CanonicalError when data is not one I-JSON value (surrounding whitespace allowed).
func Canonicalize(data []byte) ([]byte, error) {
	p := &jcsParser{in: data}
	p.skipSpace()
	var out bytes.Buffer
	out.Grow(len(data))
	if err := p.value(&out, 0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, p.fail("data after the JSON value")
	}
	return out.Bytes(), nil
}

type jcsParser struct {
	in  []byte
	pos int
}

func (p *jcsParser) fail(format string, args ...any) error {
	return &CanonicalError{Offset: p.pos, Reason: fmt.Sprintf(format, args...)}
}

func (p *jcsParser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jcsParser) value(out *bytes.Buffer, depth int) error {
	if p.pos >= len(p.in) {
		return p.fail("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out, depth+1)
	case c == '[':
		return p.array(out, depth+1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		writeString(out, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	default:
		return p.fail("unexpected character %q", c)
	}
}

func (p *jcsParser) literal(out *bytes.Buffer, lit string) error {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
		return p.fail("invalid literal")
	}
	p.pos += len(lit)
	out.WriteString(lit)
	return nil
}

type member struct {
	name  string
	key   []uint16 // name as UTF-16 code units, the sort key
	value []byte   // canonical form of the value
}

func (p *jcsParser) object(out *bytes.Buffer, depth int) error {
	if depth > MaxJSONDepth {
		return p.fail("nested deeper than %d", MaxJSONDepth)
	}
	p.pos++ // '{'
	var members []member
	seen := map[string]bool{}
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		out.WriteString("{}")
		return nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.fail("expected a member name")
		}
		at := p.pos
		name, err := p.str()
		if err != nil {
			return err
		}
		if seen[name] {
			return &CanonicalError{Offset: at, Reason: "duplicate member name"}
		}
		seen[name] = true
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.fail("expected ':'")
		}
		p.pos++
		p.skipSpace()
		var v bytes.Buffer
		if err := p.value(&v, depth); err != nil {
			return err
		}
		members = append(members, member{name: name, key: utf16.Encode([]rune(name)), value: v.Bytes()})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in an object")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] != '}' {
			return p.fail("expected ',' or '}'")
		}
		p.pos++
		break
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

func (p *jcsParser) array(out *bytes.Buffer, depth int) error {
	if depth > MaxJSONDepth {
		return p.fail("nested deeper than %d", MaxJSONDepth)
	}
	p.pos++ // '['
	out.WriteByte('[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		out.WriteByte(']')
		return nil
	}
	for first := true; ; first = false {
		if !first {
			out.WriteByte(',')
		}
		p.skipSpace()
		if err := p.value(out, depth); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return p.fail("unexpected end of input in an array")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] != ']' {
			return p.fail("expected ',' or ']'")
		}
		p.pos++
		out.WriteByte(']')
		return nil
	}
}

// str reads a string token and returns its value as valid UTF-8.
func (p *jcsParser) str() (string, error) {
	p.pos++ // '"'
	var b strings.Builder
	for {
		if p.pos >= len(p.in) {
			return "", p.fail("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			b.WriteRune(r)
			p.pos += size
		}
	}
}

// escape reads one escape sequence (a surrogate pair counts as one) and returns its rune.
func (p *jcsParser) escape() (rune, error) {
	if p.pos+1 >= len(p.in) {
		return 0, p.fail("unterminated escape")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		p.pos -= 2
		return 0, p.fail("invalid escape")
	}
	u, err := p.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case utf16.IsSurrogate(u) && u < 0xdc00:
		// A high surrogate must be followed by an escaped low one.
		if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
			p.pos += 2
			lo, err := p.hex4()
			if err != nil {
				return 0, err
			}
			if lo >= 0xdc00 && lo <= 0xdfff {
				return utf16.DecodeRune(u, lo), nil
			}
		}
		return 0, p.fail("lone surrogate")
	case utf16.IsSurrogate(u):
		return 0, p.fail("lone surrogate")
	}
	return u, nil
}

func (p *jcsParser) hex4() (rune, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.fail("truncated \\u escape")
	}
	var r rune
	for _, c := range p.in[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.fail("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}

// number reads a number token (RFC 8259 grammar) and writes its ECMAScript form.
func (p *jcsParser) number(out *bytes.Buffer) error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.in[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.in) && p.in[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.fail("invalid number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.in[start:p.pos]), 64)
	if err != nil || math.IsInf(f, 0) {
		// ParseFloat fails only past the double range (a too-small value rounds to 0).
		return &CanonicalError{Offset: start, Reason: "number outside the IEEE 754 double range"}
	}
	out.WriteString(FormatNumber(f))
	return nil
}

// FormatNumber writes a finite double as ECMAScript's Number::toString does (ECMA-262,
// 7.1.12.1), which RFC 8785 section 3.2.2.3 requires. Let the shortest digits that
// round-trip be s (k of them) and the value s × 10^(n−k); then:
//
//	k ≤ n ≤ 21   the digits and n−k zeros            (1e+20 -> 100000000000000000000)
//	0 < n ≤ 21   a decimal point after n digits      (4.5)
//	−6 < n ≤ 0   "0." and −n zeros before the digits (0.000001)
//	otherwise    d[.ddd]e±(n−1)                       (1e+21, 1e-7)
//
// −0 is "0". strconv's shortest formatting picks the closest of the shortest candidates, as
// ECMA-262's note 2 asks. It panics on NaN and infinities, which JSON cannot hold.
func FormatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("releases: FormatNumber of a non-finite value")
	}
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	if n-1 < 0 {
		return sign + m + "e-" + strconv.Itoa(1-n)
	}
	return sign + m + "e+" + strconv.Itoa(n-1)
}

// writeString writes s (valid UTF-8) as a JSON string with RFC 8785's minimal escaping.
func writeString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			out.WriteString(`\"`)
		case c == '\\':
			out.WriteString(`\\`)
		case c == '\b':
			out.WriteString(`\b`)
		case c == '\t':
			out.WriteString(`\t`)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\f':
			out.WriteString(`\f`)
		case c == '\r':
			out.WriteString(`\r`)
		case c < 0x20:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xf])
		default:
			// Bytes of multi-byte characters are copied as they are: s is valid UTF-8.
			out.WriteByte(c)
		}
	}
	out.WriteByte('"')
}
