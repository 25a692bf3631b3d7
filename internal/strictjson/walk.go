package strictjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/ledger-dev/ledger/api"
)

// The strict decoder's walk over a body already known to be well-formed JSON. encoding/json's
// Decoder tokenises a body at about a microsecond a token, and the decoder walked every body
// twice with it (duplicate names, then each object's members): a fenced write's body cost
// more to read than the write cost the database. These functions walk the bytes directly;
// they assume well-formed JSON (json.Valid, or scanBody, said so) and never fail.

// shallowDepth is how deep a body may nest for the quick check (json.Valid) to stand for
// scanBody: deeper bodies go through scanBody, which words the nesting limit its own way.
const shallowDepth = MaxDepth

// validShallow reports whether body is one well-formed JSON value nested at most
// shallowDepth deep: then scanBody would accept it, and dupMembers lists what scanBody
// would.
func validShallow(body []byte) bool {
	if !json.Valid(body) {
		return false
	}
	depth, deepest := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			i = stringEnd(body, i) - 1
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest <= shallowDepth
}

// dupMembers lists every member name given twice in one object of body (well-formed), in
// the order and with the paths scanBody gives.
func dupMembers(body []byte) []api.FieldError {
	var dups []api.FieldError
	dupsIn(trimSpace(body), &path{}, &dups)
	return dups
}

func dupsIn(raw []byte, at *path, dups *[]api.FieldError) {
	switch raw[0] {
	case '{':
		// The names so far, compared as written while they are few and plain (no string per
		// name, no map per object); past that, or from the first escaped name, a set of the
		// names as encoding/json reads them.
		var small [16][]byte
		names := small[:0]
		var seen map[string]bool
		eachQuotedMember(raw, func(quoted, value []byte) {
			dup := false
			if inner, plain := plainName(quoted); seen == nil && plain && len(names) < len(small) {
				for _, n := range names {
					if bytes.Equal(n, inner) {
						dup = true
						break
					}
				}
				names = append(names, inner)
			} else {
				if seen == nil {
					seen = make(map[string]bool, 2*len(small))
					for _, n := range names {
						seen[string(n)] = true
					}
				}
				name := memberName(quoted)
				dup = seen[name]
				seen[name] = true
			}
			if !dup && value[0] != '{' && value[0] != '[' {
				return // a scalar holds no object: no path to make
			}
			at.memberQuoted(quoted)
			if dup {
				*dups = append(*dups, api.FieldError{Field: at.String(), Reason: "is given more than once"})
			}
			dupsIn(value, at, dups)
			at.pop()
		})
	case '[':
		i := 0
		eachElement(raw, func(value []byte) {
			at.element(i)
			dupsIn(value, at, dups)
			at.pop()
			i++
		})
	}
}

// eachRawMember calls f with every member of the well-formed object raw, in order, repeated
// names included: the name as encoding/json reads it, and the value's bytes without the
// white space around them.
func eachRawMember(raw []byte, f func(name string, value []byte)) {
	eachQuotedMember(raw, func(quoted, value []byte) { f(memberName(quoted), value) })
}

// eachQuotedMember is eachRawMember with each name as written, quotes included: a caller
// that only looks the name up (plainName) need not make a string of it.
func eachQuotedMember(raw []byte, f func(quoted, value []byte)) {
	i := skipSpace(raw, 1) // past '{'
	for raw[i] != '}' {
		end := stringEnd(raw, i)
		quoted := raw[i:end]
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // past ':'
		vend := valueEnd(raw, i)
		f(quoted, raw[i:vend])
		i = skipSpace(raw, vend)
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
}

// eachElement calls f with every element of the well-formed array raw, in order.
func eachElement(raw []byte, f func(value []byte)) {
	i := skipSpace(raw, 1) // past '['
	for raw[i] != ']' {
		vend := valueEnd(raw, i)
		f(raw[i:vend])
		i = skipSpace(raw, vend)
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
}

// memberName reads a quoted member name as encoding/json does: escapes resolved, and bytes
// that are not UTF-8 replaced by U+FFFD.
func memberName(quoted []byte) string {
	if inner, ok := plainName(quoted); ok {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // well-formed
	return s
}

// plainName returns the bytes between the quotes of a well-formed JSON string when they are
// what encoding/json reads (no escape, valid UTF-8), and false otherwise.
func plainName(quoted []byte) ([]byte, bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		return nil, false
	}
	return inner, true
}

// valueEnd returns the index just past the well-formed value starting at raw[i].
func valueEnd(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				i = stringEnd(raw, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	// A number, true, false or null: up to the next delimiter or white space.
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string whose opening quote is raw[i].
func stringEnd(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// trimSpace trims JSON's white space (bytes.TrimSpace trims more kinds).
func trimSpace(raw []byte) []byte {
	i := skipSpace(raw, 0)
	j := len(raw)
	for j > i && (raw[j-1] == ' ' || raw[j-1] == '\t' || raw[j-1] == '\n' || raw[j-1] == '\r') {
		j--
	}
	return raw[i:j]
}

// Stored returns a JSON value read from the database (a run's input, a decision's options
// or answer) as the API sends it: as stored when it is well-formed and nested at most
// MaxDepth deep, which every value written since the cap is; otherwise (a value stored
// before the cap, or written to the table by other means) a JSON string holding its text.
// encoding/json re-reads every raw value it sends and fails past its own 10,000 levels, so
// one such row made every list page holding it answer 500; as a string it travels whole,
// its nesting no reader's concern. Nil stays nil (absent).
func Stored(raw []byte) json.RawMessage {
	if len(raw) == 0 || validShallow(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw)) // a string always marshals (bad UTF-8 becomes U+FFFD)
	return b
}
