// Package strictjson is the strict JSON decoder of request bodies and cursors. encoding/json
// matches member names case-insensitively, keeps the last of duplicate members and stops at
// the first value of a wrong type, so a request it decodes can mean something other than what
// a stricter reader (a proxy, a validator, another SDK) understood. This decoder walks the
// body beside the target type instead: member names match the json tags exactly, a member name
// given twice in any object of the body (free-form JSON such as a run's input included) is
// refused, and every field that fails to decode is reported, not only the first. Values of
// types that decode themselves (json.Unmarshaler, encoding.TextUnmarshaler: times, UUIDs,
// enums, raw JSON) and scalars are decoded by encoding/json.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// MaxDepth bounds the nesting of a body: the arrays and objects open at once, the body's own
// object counting as the first. Real inputs nest a few levels; a cap far below encoding/json's
// 10,000 keeps the work of one body (and of every later read of what it stored) in
// proportion to its size.
const MaxDepth = 64

// Decode decodes body, one JSON value, into dst (a non-nil pointer). It returns an
// invalid_request error: a syntax problem alone, or every member that failed to decode.
func Decode(body []byte, dst any) error {
	_, err := DecodeZeros(body, dst)
	return err
}

// DecodeZeros is Decode that also returns, by path, the members the body gave
// with their type's zero value ("", 0, the nil UUID), each with the words that refuse it: a
// required member given so fails validator/v10's "required" exactly as a missing one does,
// and "is required" would tell the caller who sent it that it was not sent.
func DecodeZeros(body []byte, dst any) (map[string]string, error) {
	var dups []api.FieldError
	if validShallow(body) {
		dups = dupMembers(body)
	} else {
		var err error
		if dups, err = scanBody(body); err != nil {
			return nil, err
		}
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("strictjson: decode target must be a non-nil pointer")
	}
	d := decoder{errs: dups, dups: len(dups) > 0}
	d.value(bytes.TrimSpace(body), v.Elem())
	if len(d.errs) > 0 {
		return d.zeros, apperr.FieldsInvalid(d.errs...)
	}
	return d.zeros, nil
}

// scanBody refuses malformed JSON, more than one value and excessive nesting, and lists
// every member name given twice in one object.
func scanBody(body []byte) ([]api.FieldError, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var dups []api.FieldError
	if err := scanValue(dec, &path{}, 0, &dups); err != nil {
		return nil, syntaxProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apperr.New(api.CodeInvalidRequest, "the body holds more than one JSON value")
	}
	return dups, nil
}

var errTooDeep = errors.New("nested too deep")

// scanValue reads one value whose containers open at depth+1.
func scanValue(dec *json.Decoder, at *path, depth int, dups *[]api.FieldError) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == json.Delim('{') || tok == json.Delim('[') {
		if depth++; depth > MaxDepth {
			return errTooDeep
		}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string) // the decoder yields a string in key position
			at.member(k)
			if seen[k] {
				*dups = append(*dups, api.FieldError{Field: at.String(), Reason: "is given more than once"})
			}
			seen[k] = true
			if err := scanValue(dec, at, depth, dups); err != nil {
				return err
			}
			at.pop()
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			at.element(i)
			if err := scanValue(dec, at, depth, dups); err != nil {
				return err
			}
			at.pop()
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

func syntaxProblem(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return apperr.New(api.CodeInvalidRequest, "malformed JSON at byte %d", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apperr.New(api.CodeInvalidRequest, "truncated JSON body")
	case errors.Is(err, errTooDeep):
		return apperr.New(api.CodeInvalidRequest, "the body is nested more than %d levels deep", MaxDepth)
	}
	return apperr.New(api.CodeInvalidRequest, "malformed JSON body")
}

// path is a value's place in a body, kept as a stack of levels (at most MaxDepth of them,
// reused for the whole body) and made into text only for a field error: every level's
// whole path made as text cost memory that grew with the depth squared times the names'
// length.
type path struct {
	levels []level
}

// level is one step of a path: a member by name (or by its name as written, resolved only
// when printed), or an element by index.
type level struct {
	name   string
	quoted []byte
	index  int
	elem   bool
}

func (p *path) member(name string)         { p.levels = append(p.levels, level{name: name}) }
func (p *path) memberQuoted(quoted []byte) { p.levels = append(p.levels, level{quoted: quoted}) }
func (p *path) element(i int)              { p.levels = append(p.levels, level{index: i, elem: true}) }
func (p *path) pop()                       { p.levels = p.levels[:len(p.levels)-1] }

// String is the path as field errors name it: a.b[2].c, "" for the body itself.
func (p *path) String() string {
	var b strings.Builder
	for i, l := range p.levels {
		switch {
		case l.elem:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(l.index))
			b.WriteByte(']')
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			if l.quoted != nil {
				b.WriteString(memberName(l.quoted))
			} else {
				b.WriteString(l.name)
			}
		}
	}
	return b.String()
}

// decoder collects the field errors of one body, and the members it gave as zero values.
type decoder struct {
	at   path // where the walk is
	errs []api.FieldError
	// errAt indexes errs by field once there are a few: a body of a hundred thousand
	// unknown members compared each with every earlier error took half a minute of CPU.
	errAt map[string]int
	zeros map[string]string
	// dups says the body repeats a member name somewhere: only then must a walk of its
	// members pass each name on once.
	dups bool
}

// fail records why the value at d.at failed.
func (d *decoder) fail(reason string) {
	path := d.at.String()
	if path == "" {
		path = "(body)"
	}
	if d.errAt == nil && len(d.errs) >= 8 {
		d.errAt = make(map[string]int, 2*len(d.errs))
		for i, e := range d.errs {
			if _, ok := d.errAt[e.Field]; !ok {
				d.errAt[e.Field] = i
			}
		}
	}
	i, found := -1, false
	if d.errAt != nil {
		i, found = d.errAt[path]
	} else {
		for j := range d.errs {
			if d.errs[j].Field == path {
				i, found = j, true
				break
			}
		}
	}
	if found {
		// One entry per field, with every reason (a duplicate that is also unknown).
		d.errs[i].Reason += "; " + reason
		return
	}
	d.errs = append(d.errs, api.FieldError{Field: path, Reason: reason})
	if d.errAt != nil {
		d.errAt[path] = len(d.errs) - 1
	}
}

var (
	unmarshalerType     = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// decodesItself reports whether encoding/json hands a value of t to its own decoder. The
// answer is remembered per type, as fieldCache remembers fields: four Implements a leaf
// (method-set searches by name) were about 6 % of a checkpoint's decode.
func decodesItself(t reflect.Type) bool {
	if v, ok := selfDecoding.Load(t); ok {
		return v.(bool)
	}
	p := reflect.PointerTo(t)
	self := t.Implements(unmarshalerType) || p.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
	selfDecoding.Store(t, self)
	return self
}

var selfDecoding sync.Map // reflect.Type -> bool (decodesItself)

// value decodes raw (one well-formed JSON value) into v at path.
func (d *decoder) value(raw []byte, v reflect.Value) {
	null := string(raw) == "null"
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if null {
			v.Set(reflect.Zero(t))
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(raw, v.Elem())
		return
	case decodesItself(t), null:
		// null leaves a non-pointer as it is, as encoding/json does.
		d.leaf(raw, v)
	case t.Kind() == reflect.Struct:
		d.object(raw, v)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		d.array(raw, v)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && !decodesItself(t.Key()):
		d.mapValue(raw, v)
	default:
		d.leaf(raw, v)
	}
}

func (d *decoder) object(raw []byte, v reflect.Value) {
	if raw[0] != '{' {
		d.fail("must be an object")
		return
	}
	fields := fieldsOf(v.Type())
	d.eachMember(raw, func(quoted, member []byte) {
		// A known name is looked up without a string of its own, and the field's name,
		// equal to it, makes the path.
		var fi field
		ok := false
		if inner, plain := plainName(quoted); plain {
			fi, ok = fields[string(inner)]
		} else {
			fi, ok = fields[memberName(quoted)]
		}
		if !ok {
			d.at.memberQuoted(quoted)
			d.fail("is not a known field")
			d.at.pop()
			return
		}
		d.at.member(fi.name)
		if f, ok := fieldByIndex(v, fi.index); ok {
			d.value(member, f)
		} else {
			d.fail("is not a known field")
		}
		d.at.pop()
	})
}

func (d *decoder) array(raw []byte, v reflect.Value) {
	if raw[0] != '[' {
		d.fail("must be an array")
		return
	}
	var items [][]byte
	eachElement(raw, func(item []byte) { items = append(items, item) })
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		d.at.element(i)
		d.value(item, out.Index(i))
		d.at.pop()
	}
	v.Set(out)
}

func (d *decoder) mapValue(raw []byte, v reflect.Value) {
	if raw[0] != '{' {
		d.fail("must be an object")
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.eachMember(raw, func(quoted, member []byte) {
		name := memberName(quoted)
		elem := reflect.New(v.Type().Elem()).Elem()
		d.at.member(name)
		d.value(member, elem)
		d.at.pop()
		v.SetMapIndex(reflect.ValueOf(name).Convert(v.Type().Key()), elem)
	})
}

// eachMember calls f with each member of a well-formed JSON object, in order, its name
// quoted as written; a repeated name (already refused by scanBody) is passed on once.
func (d *decoder) eachMember(raw []byte, f func(quoted, value []byte)) {
	if !d.dups {
		eachQuotedMember(raw, f)
		return
	}
	seen := map[string]bool{}
	eachQuotedMember(raw, func(quoted, value []byte) {
		name := memberName(quoted)
		if !seen[name] {
			seen[name] = true
			f(quoted, value)
		}
	})
}

// leaf decodes a value with encoding/json and checks the ranges both databases keep.
func (d *decoder) leaf(raw []byte, v reflect.Value) {
	if !plainLeaf(raw, v) {
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			d.fail(leafReason(err, v.Type()))
			return
		}
	}
	if why := rangeProblem(v); why != "" {
		d.fail(why)
		return
	}
	if string(raw) != "null" && v.IsZero() {
		if d.zeros == nil {
			d.zeros = map[string]string{}
		}
		d.zeros[d.at.String()] = zeroReason(v.Type())
	}
}

// plainLeaf stores raw in v and reports true where encoding/json would store the same and
// succeed: a string without escapes into a string kind, an integer literal that fits into
// an integer kind, true or false into a bool, none of them a type that decodes itself.
// Anything else (and every error, so that its wording is encoding/json's) is left to
// encoding/json, which costs a decoder and a boxed pointer per value.
func plainLeaf(raw []byte, v reflect.Value) bool {
	t := v.Type()
	if decodesItself(t) {
		return false
	}
	switch k := t.Kind(); {
	case k == reflect.String && raw[0] == '"':
		inner, ok := plainName(raw)
		if !ok {
			return false
		}
		v.SetString(string(inner))
		return true
	case k >= reflect.Int && k <= reflect.Int64 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		n, err := strconv.ParseInt(string(raw), 10, t.Bits())
		if err != nil {
			return false
		}
		v.SetInt(n)
		return true
	case k == reflect.Bool && (string(raw) == "true" || string(raw) == "false"):
		v.SetBool(raw[0] == 't')
		return true
	}
	return false
}

// zeroReason words the refusal of a required member given as its type's zero value.
func zeroReason(t reflect.Type) string {
	switch {
	case t == uuidType:
		return "must not be the nil UUID"
	case t.Kind() == reflect.String:
		return "must not be empty"
	case t.Kind() == reflect.Bool:
		return "must be true"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return "must not be 0"
	}
	return "must not be empty"
}

var (
	timeValueType = reflect.TypeOf(time.Time{})
	nullUUIDType  = reflect.TypeOf(uuid.NullUUID{})
	uuidType      = reflect.TypeOf(uuid.UUID{})
)

// rangeProblem refuses what a database column cannot hold: times outside 0001..9999 UTC
// and unsigned integers past bigint.
func rangeProblem(v reflect.Value) string {
	switch {
	case v.Type() == timeValueType:
		return TimeProblem(v.Interface().(time.Time))
	case v.Kind() == reflect.Uint64 || v.Kind() == reflect.Uint:
		if v.Uint() > math.MaxInt64 {
			return fmt.Sprintf("must be at most %d", int64(math.MaxInt64))
		}
	}
	return ""
}

// leafReason words a decoding error of a value of type t for the caller.
func leafReason(err error, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	var ve *api.ValueError
	switch {
	case errors.As(err, &ve):
		return ve.Reason // a wire type's own refusal (api.Time, an enum's list of names)
	case t == timeValueType || errors.As(err, &pe):
		return NotRFC3339
	case t == uuidType || t == nullUUIDType:
		return "must be a UUID"
	case errors.As(err, &te):
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return IntegerReason(strings.TrimPrefix(te.Value, "number "), t)
		}
		return "must be " + jsonKind(t)
	}
	return "is not a valid value"
}

// IntegerReason words why the JSON value lit (as encoding/json names it: "string", "bool",
// or the number's own text) does not decode into the integer type t: it is not a whole
// number, or it is one past the type's range (with the bound it passed).
func IntegerReason(lit string, t reflect.Type) string {
	if strings.ContainsAny(lit, ".eE") || lit == "" || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
		return "must be an integer"
	}
	if lit[0] == '-' {
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			return "must be at least 0"
		}
		return fmt.Sprintf("must be at least %d", int64(-1)<<(t.Bits()-1))
	}
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return fmt.Sprintf("must be at most %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	}
	return fmt.Sprintf("must be at most %d", int64(math.MaxInt64)>>(64-t.Bits()))
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// fieldsOf maps the exact JSON member names of struct type t to field index paths,
// following encoding/json's rules for tags, "-" and embedded structs (an embedded
// struct's members are promoted unless a shallower field has the name).
func fieldsOf(t reflect.Type) map[string]field {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]field)
	}
	out := map[string]field{}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" && tag == "-" {
				continue
			}
			idx := append(append([]int{}, index...), i)
			ft := f.Type
			if f.Anonymous && name == "" {
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if d, ok := depthOf[name]; !ok || len(idx) < d {
				out[name], depthOf[name] = field{name: name, index: idx}, len(idx)
			}
		}
	}
	walk(t, nil)
	fieldCache.Store(t, out)
	return out
}

// field is a struct field by its JSON member name: the name (kept so that a path is made of
// it rather than of a new string per body) and its index path.
type field struct {
	name  string
	index []int
}

var fieldCache sync.Map // reflect.Type -> map[string]field

// fieldByIndex is v.FieldByIndex that allocates nil embedded pointers on the way.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, false
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, v.CanSet()
}

// The reasons given for a time that does not parse, and for one out of range: api.Time's
// own (a test keeps them equal), so a time says the same whether its field is an api.Time
// or a time.Time, in a body, a query filter or a cursor.
const (
	NotRFC3339   = "is not an RFC 3339 time"
	OutsideTimes = "is outside 0001-01-01..9999-12-31 UTC"
)

// TimeProblem says why t is outside the times the service keeps (api.MinTime..MaxTime:
// what datetimeoffset holds and what SQLite's fixed-width text orders), or "".
func TimeProblem(t time.Time) string {
	if t.Before(api.MinTime) || t.After(api.MaxTime) {
		return OutsideTimes
	}
	return ""
}

// ParseTime reads an RFC 3339 time (a query filter) as api.ParseTime does: the reason is
// "" when it parses and is in range.
func ParseTime(s string) (time.Time, string) {
	t, err := api.ParseTime(s)
	var ve *api.ValueError
	if errors.As(err, &ve) {
		return time.Time{}, ve.Reason
	}
	if err != nil {
		return time.Time{}, NotRFC3339
	}
	return t.Time, ""
}
