package web

import (
	"bytes"
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

	"github.com/ledger-dev/ledger/internal/apperr"
)

// Validator checks request structs with validator/v10 and names fields by their JSON names.
type Validator struct{ v *validator.Validate }

// NewValidator returns the service's validator. Besides validator/v10's own tags it knows
// ident=N (an identifier of 1..N UTF-16 code units, IdentProblem) and segment=N (an
// identifier that also appears as a path segment, so without "/").
func NewValidator() *Validator {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	for tag, segment := range map[string]bool{"ident": false, "segment": true} {
		_ = v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			n, err := strconv.Atoi(fl.Param())
			return err == nil && IdentProblem(fl.Field().String(), n, segment) == ""
		})
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
		return apperr.New(apperr.Invalid, "the request cannot be validated")
	}
	fields := make([]apperr.FieldError, 0, len(ves))
	for _, fe := range ves {
		fields = append(fields, apperr.FieldError{Field: fieldPath(fe.Namespace()), Reason: reason(fe)})
	}
	return apperr.FieldsInvalid(fields...)
}

// fieldPath drops the struct's own name: "enqueueRequest.child.subject" -> "child.subject".
func fieldPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
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
	case "ident", "segment":
		n, _ := strconv.Atoi(fe.Param())
		if s, ok := fe.Value().(string); ok {
			if why := IdentProblem(s, n, fe.Tag() == "segment"); why != "" {
				return why
			}
		}
		return "must be an identifier of 1 to " + fe.Param() + " characters"
	}
	if fe.Param() != "" {
		return fmt.Sprintf("fails %s=%s", fe.Tag(), fe.Param())
	}
	return "fails " + fe.Tag()
}

// Bind decodes the JSON body into dst strictly and validates it. Member names match
// exactly, a duplicate member or an unknown one is refused, and one invalid_request lists
// every field that failed to decode or to validate. An empty body decodes as {} when
// optional is true. (The route has already refused a body that is not JSON with 415.)
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
	var fields []apperr.FieldError
	if err := decodeStrict(body, dst); err != nil {
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
		fields = mergeFields(fields, e.Fields)
	}
	if len(fields) > 0 {
		return apperr.FieldsInvalid(fields...)
	}
	return nil
}

// mergeFields adds the validation failures to the decoding failures, leaving out a field
// (or a member inside it) that already failed to decode: its zero value says nothing.
func mergeFields(decoded, validated []apperr.FieldError) []apperr.FieldError {
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
		return uuid.Nil, apperr.FieldsInvalid(apperr.FieldError{Field: name, Reason: "must be a UUID"})
	}
	return id, nil
}
