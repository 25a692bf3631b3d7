package web

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// Validator checks request structs with validator/v10 and names fields by their JSON names.
type Validator struct{ v *validator.Validate }

// NewValidator returns the service's validator.
func NewValidator() *Validator {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			name = f.Tag.Get("query")
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	// ident=N: an identifier of 1..N characters (see ValidIdent).
	_ = v.RegisterValidation("ident", func(fl validator.FieldLevel) bool {
		n, err := strconv.Atoi(fl.Param())
		return err == nil && ValidIdent(fl.Field().String(), n)
	})
	return &Validator{v: v}
}

// Validate returns an invalid_request error listing every failing field.
func (v *Validator) Validate(i any) error {
	err := v.v.Struct(i)
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return apperr.New(apperr.Invalid, "the request cannot be validated")
	}
	fields := make([]apperr.FieldError, 0, len(ves))
	t := reflect.TypeOf(i)
	for _, fe := range ves {
		fields = append(fields, apperr.FieldError{Field: fieldPath(t, fe.Namespace()), Reason: reason(fe)})
	}
	return apperr.FieldsInvalid(fields...)
}

// fieldPath turns a validator namespace into the member's path as the client wrote it: the
// struct's own name and the names of embedded structs go ("EnqueueRequest.RunSpec.subject"
// is "subject", "DelegationRequest.child.subject" is "child.subject").
func fieldPath(t reflect.Type, ns string) string {
	parts := strings.Split(ns, ".")
	if len(parts) < 2 {
		return ns
	}
	var out []string
	for _, p := range parts[1:] {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			t = t.Elem()
		}
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(p); ok && f.Anonymous {
				t = f.Type
				continue
			}
			name, _, _ := strings.Cut(p, "[")
			if f, ok := fieldByTagName(t, name); ok {
				t = f.Type
			} else {
				t = nil
			}
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// fieldByTagName finds a struct's field (embedded structs' included) by the name the
// validator reports for it: its JSON or query name.
func fieldByTagName(t reflect.Type, name string) (reflect.StructField, bool) {
	return t.FieldByNameFunc(func(goName string) bool {
		f, _ := t.FieldByName(goName)
		json, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return json == name || f.Tag.Get("query") == name || (json == "" && f.Tag.Get("query") == "" && goName == name)
	})
}

func reason(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "min", "gte":
		return "must be at least " + fe.Param()
	case "max", "lte":
		return "must be at most " + fe.Param()
	case "oneof":
		return "must be one of: " + fe.Param()
	case "uuid":
		return "must be a UUID"
	case "ident":
		return "must be 1 to " + fe.Param() + " characters without control characters"
	}
	if fe.Param() != "" {
		return fmt.Sprintf("fails %s=%s", fe.Tag(), fe.Param())
	}
	return "fails " + fe.Tag()
}

// Bind decodes the JSON body into dst strictly (unknown fields, trailing data and type
// mismatches are 400) and validates it. An empty body decodes as {} when optional is true.
func Bind(c echo.Context, dst any, optional bool) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.New(apperr.BodyTooLarge, "the request body is larger than %d bytes", mbe.Limit)
		}
		return apperr.New(apperr.Invalid, "cannot read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if !optional {
			return apperr.New(apperr.Invalid, "a JSON body is required")
		}
		body = []byte("{}")
	}
	if err := decodeStrict(body, dst); err != nil {
		return err
	}
	return c.Validate(dst)
}

func decodeStrict(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if fields := valueErrors(body, reflect.TypeOf(dst).Elem(), ""); len(fields) > 0 {
			return apperr.FieldsInvalid(fields...)
		}
		return decodeProblem(err)
	}
	if dec.More() {
		return apperr.New(apperr.Invalid, "the body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return apperr.New(apperr.Invalid, "the body holds more than one JSON value")
	}
	return nil
}

func decodeProblem(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return apperr.New(apperr.Invalid, "malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(body)"
		}
		return apperr.FieldsInvalid(apperr.FieldError{Field: field, Reason: "must be " + jsonKind(te.Type)})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: "is not a known field"})
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apperr.New(apperr.Invalid, "truncated JSON body")
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apperr.New(apperr.Invalid, "malformed JSON body")
}

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
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// PathUUID reads a UUID path parameter; a malformed one is 400.
func PathUUID(c echo.Context, name string) (uuid.UUID, error) {
	raw := c.Param(name)
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		return uuid.Nil, apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: "must be a UUID"})
	}
	return id, nil
}

// PathIdent reads an identifier path parameter (1..max characters, no control characters).
func PathIdent(c echo.Context, name string, max int) (string, error) {
	// Echo routes on URL.RawPath when the path holds an escape that decoding would change
	// (such as %2F), and then hands the parameters over still escaped.
	raw := c.Param(name)
	var err error
	if c.Request().URL.RawPath != "" {
		raw, err = url.PathUnescape(raw)
	}
	if err != nil || !ValidIdent(raw, max) {
		return "", apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: fmt.Sprintf("must be 1 to %d characters without control characters", max)})
	}
	return raw, nil
}

// ValidIdent reports whether s is a usable identifier: 1..max UTF-16 code units (SQL
// Server's nvarchar(max) counts those, so a character outside the BMP counts twice), valid
// UTF-8, no control characters. Identifiers compare case-sensitively on both dialects.
func ValidIdent(s string, max int) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return UTF16Len(s) <= max
}

// valueErrors names every member of a JSON object whose value its field's type refuses
// (a wire type's *api.ValueError, a malformed UUID, a value of the wrong JSON type),
// decoding the members one by one and descending into objects: encoding/json stops at
// the first such error, and names the member only for some of them.
func valueErrors(body []byte, t reflect.Type, prefix string) []apperr.FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var members map[string]json.RawMessage
	if t.Kind() != reflect.Struct || json.Unmarshal(body, &members) != nil {
		return nil
	}
	fields := map[string]reflect.Type{}
	jsonFields(t, fields)
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []apperr.FieldError
	for _, name := range names {
		ft, ok := fields[name]
		if !ok {
			continue
		}
		raw := members[name]
		base := ft
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if base.Kind() == reflect.Struct && !reflect.PointerTo(base).Implements(jsonUnmarshaler) &&
			!reflect.PointerTo(base).Implements(textUnmarshaler) && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			out = append(out, valueErrors(raw, base, prefix+name+".")...)
			continue
		}
		if err := json.Unmarshal(raw, reflect.New(ft).Interface()); err != nil {
			out = append(out, apperr.FieldError{Field: prefix + name, Reason: valueReason(err, ft)})
		}
	}
	return out
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// jsonFields maps the JSON member names of a struct (its embedded structs' included) to
// their fields' types.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			jsonFields(f.Type, out)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

func valueReason(err error, t reflect.Type) string {
	var ve *api.ValueError
	var te *json.UnmarshalTypeError
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case errors.As(err, &ve):
		return ve.Reason
	case t == uuidType:
		return "must be a UUID"
	case errors.As(err, &te):
		return "must be " + jsonKind(t)
	}
	return "is not a valid value"
}
