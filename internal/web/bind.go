package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/strictjson"
	"github.com/ledger-dev/ledger/internal/validate"
)

// Validator checks request structs with validator/v10 and names fields by their JSON names.
type Validator struct{ v *validator.Validate }

// NewValidator returns the service's validator. Besides validator/v10's own tags it knows
// ident=N (an identifier of 1..N UTF-16 code units, IdentProblem) and segment=N (an
// identifier that also appears as a path segment, so without "/"), and api's limit tags
// (purpose: max=api.MaxPurpose).
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
	for tag, segment := range map[string]bool{"ident": false, "segment": true} {
		_ = v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			n, err := strconv.Atoi(fl.Param())
			return err == nil && validate.IdentProblem(fl.Field().String(), n, segment) == ""
		})
	}
	_ = v.RegisterValidation("errcode", func(fl validator.FieldLevel) bool { return validate.ErrorCode(fl.Field().String()) })
	for alias, def := range api.LimitTags() {
		v.RegisterAlias(alias, def)
	}
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
		return apperr.New(api.CodeInvalidRequest, "the request cannot be validated")
	}
	fields := make([]api.FieldError, 0, len(ves))
	t := reflect.TypeOf(i)
	for _, fe := range ves {
		fields = append(fields, api.FieldError{Field: fieldPath(t, fe.Namespace()), Reason: reason(fe)})
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

// reasonRequired is the reason of a required member that is missing.
const reasonRequired = "is required"

// reason reads the actual tag: a limit tag (purpose) fails as the max it stands for.
func reason(fe validator.FieldError) string {
	switch fe.ActualTag() {
	case "required":
		return reasonRequired
	case "len":
		if fe.Kind() == reflect.String {
			return "must be " + fe.Param() + " characters long"
		}
		return "must have " + fe.Param() + " items"
	case "hexadecimal":
		return "must be hexadecimal digits"
	case "min", "gte":
		return "must be at least " + fe.Param()
	case "max", "lte":
		return "must be at most " + fe.Param()
	case "uuid":
		return "must be a UUID"
	case "errcode":
		return "must be 1 to 64 characters of a-z, 0-9, '_', '.' and '-'"
	case "ident", "segment":
		n, _ := strconv.Atoi(fe.Param())
		if s, ok := fe.Value().(string); ok {
			if why := validate.IdentProblem(s, n, fe.ActualTag() == "segment"); why != "" {
				return why
			}
		}
		return "must be an identifier of 1 to " + fe.Param() + " characters"
	}
	if fe.Param() != "" {
		return fmt.Sprintf("fails %s=%s", fe.ActualTag(), fe.Param())
	}
	return "fails " + fe.ActualTag()
}

// Bind decodes the JSON body into dst strictly and validates it. Member names match
// exactly, a duplicate member or an unknown one is refused, and one invalid_request lists
// every field that failed to decode or to validate. An empty body decodes as {} when
// optional is true. (The route has already refused a body that is not JSON with 415.)
func Bind(c echo.Context, dst any, optional bool) error {
	body, err := readBody(c, optional)
	if err != nil {
		return err
	}
	return BindJSON(c, body, dst)
}

// BindPresent is Bind that also reports which top-level members the body gave, null ones
// included: for the few members whose null means something other than their absence (a
// budget removed, not kept).
func BindPresent(c echo.Context, dst any, optional bool) (map[string]bool, error) {
	body, err := readBody(c, optional)
	if err != nil {
		return nil, err
	}
	if err := BindJSON(c, body, dst); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, apperr.New(api.CodeInvalidRequest, "the body is not a JSON object")
	}
	present := make(map[string]bool, len(members))
	for m := range members {
		present[m] = true
	}
	return present, nil
}

// readBody reads the request body within its size limit ("{}" for an empty optional one).
func readBody(c echo.Context, optional bool) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apperr.New(api.CodeBodyTooLarge, "the request body is larger than %d bytes", mbe.Limit)
		}
		// Anything else is the connection failing under the body: the client went away.
		return nil, fmt.Errorf("%w: read the request body: %w", ErrClientGone, err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if !optional {
			return nil, apperr.New(api.CodeInvalidRequest, "a JSON body is required")
		}
		body = []byte("{}")
	}
	return body, nil
}

// BindJSON is Bind of a body already read: the one strict decoder and validation for JSON
// that reaches the service another way than as a request body (a console form).
func BindJSON(c echo.Context, body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apperr.New(api.CodeInvalidRequest, "a JSON body is required")
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		// The decoder leaves a struct as it is for null (as encoding/json does); a body is an object.
		return apperr.FieldsInvalid(api.FieldError{Field: "(body)", Reason: "must be an object"})
	}
	var fields []api.FieldError
	zeros, err := strictjson.DecodeZeros(body, dst)
	if err != nil {
		e, ok := apperr.As(err)
		if !ok || len(e.Fields) == 0 {
			return err // not a field problem: malformed JSON
		}
		fields = e.Fields
	}
	if err := c.Validate(dst); err != nil {
		e, ok := apperr.As(err)
		if !ok {
			return err
		}
		for i, f := range e.Fields {
			// validator/v10 cannot tell a required member given as 0 or "" from a missing one.
			if why, given := zeros[f.Field]; given && f.Reason == reasonRequired {
				e.Fields[i].Reason = why
			}
		}
		fields = mergeFields(fields, e.Fields)
	}
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// mergeFields adds the validation failures to the decoding failures, leaving out a field
// (or a member inside it) that already failed to decode: its zero value says nothing.
func mergeFields(decoded, validated []api.FieldError) []api.FieldError {
	out := decoded
	for _, v := range validated {
		covered := false
		for _, d := range decoded {
			if d.Field == "(body)" || v.Field == d.Field || strings.HasPrefix(v.Field, d.Field+".") || strings.HasPrefix(v.Field, d.Field+"[") {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, v)
		}
	}
	return out
}

// PathUUID reads a UUID path parameter; a malformed one is 400.
func PathUUID(c echo.Context, name string) (uuid.UUID, error) {
	raw := c.Param(name)
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		return uuid.Nil, apperr.FieldsInvalid(api.FieldError{Field: name, Reason: "must be a UUID"})
	}
	return id, nil
}
