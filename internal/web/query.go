package web

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/strictjson"
)

var uuidType = reflect.TypeFor[uuid.UUID]()

// BindQuery reads the query parameters into dst, a pointer to one of the api package's
// parameter structs (fields tagged `query:"name"`, embedded structs included), and validates
// them. One 400 lists every parameter that is unknown, repeated (a list field, a slice, takes
// each repeat as an item), malformed or out of bounds. An empty value counts as absent.
func BindQuery(c echo.Context, dst any) error {
	rv := reflect.ValueOf(dst).Elem()
	fields := map[string]reflect.Value{}
	queryFields(rv, fields)
	var bad []api.FieldError
	failed := map[string]bool{}
	for name, values := range c.QueryParams() {
		f, ok := fields[name]
		switch {
		case !ok:
			bad = append(bad, api.FieldError{Field: name, Reason: "is not a known parameter"})
			continue
		case f.Kind() == reflect.Slice:
			// A list parameter is repeated, one item each (name=a&name=b); an empty item is
			// left to the items' validation.
			if setQueryList(f, name, values, &bad) {
				failed[name] = true
			}
			continue
		case len(values) > 1:
			bad = append(bad, api.FieldError{Field: name, Reason: "must be given once"})
			failed[name] = true
			continue
		case values[0] == "":
			continue
		}
		if reason := setQueryValue(f, values[0]); reason != "" {
			bad = append(bad, api.FieldError{Field: name, Reason: reason})
			failed[name] = true
		}
	}
	if err := c.Validate(dst); err != nil {
		e, ok := apperr.As(err)
		if !ok {
			return err
		}
		for _, fe := range e.Fields {
			if !failed[fe.Field] {
				bad = append(bad, fe)
			}
		}
	}
	if len(bad) > 0 {
		return apperr.FieldsInvalid(bad...)
	}
	return nil
}

// queryFields maps each query parameter name to its field.
func queryFields(v reflect.Value, out map[string]reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			queryFields(v.Field(i), out)
			continue
		}
		if name := f.Tag.Get("query"); name != "" {
			out[name] = v.Field(i)
		}
	}
}

// setQueryList parses each of a repeated parameter's values into the list field's items,
// appending a problem per item that does not parse (named name[i]); it says whether any
// failed.
func setQueryList(f reflect.Value, name string, values []string, bad *[]api.FieldError) bool {
	list := reflect.MakeSlice(f.Type(), len(values), len(values))
	failed := false
	for i, raw := range values {
		if reason := setQueryValue(list.Index(i), raw); reason != "" {
			*bad = append(*bad, api.FieldError{Field: fmt.Sprintf("%s[%d]", name, i), Reason: reason})
			failed = true
		}
	}
	f.Set(list)
	return failed
}

// setQueryValue parses raw into the field (a value or a pointer) and returns why it cannot,
// or "".
func setQueryValue(f reflect.Value, raw string) string {
	t := f.Type()
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	v := reflect.New(t)
	if tu, ok := v.Interface().(encoding.TextUnmarshaler); ok {
		if err := tu.UnmarshalText([]byte(raw)); err != nil {
			var ve *api.ValueError
			switch {
			case errors.As(err, &ve):
				return ve.Reason
			case t == uuidType:
				return "must be a UUID"
			}
			return "is not valid"
		}
		if t == uuidType && len(raw) != 36 {
			return "must be a UUID"
		}
	} else {
		switch t.Kind() {
		case reflect.String:
			v.Elem().SetString(raw)
		case reflect.Int, reflect.Int32, reflect.Int64:
			n, err := strconv.ParseInt(raw, 10, t.Bits())
			if errors.Is(err, strconv.ErrRange) {
				return strictjson.IntegerReason(raw, t)
			}
			if err != nil {
				return "must be an integer"
			}
			v.Elem().SetInt(n)
		case reflect.Bool:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return "must be true or false"
			}
			v.Elem().SetBool(b)
		default:
			panic("web: query parameter of unsupported type " + t.String())
		}
	}
	if ptr {
		f.Set(v)
	} else {
		f.Set(v.Elem())
	}
	return ""
}

// LimitOf is the page size the parameters ask for (DefaultLimit when absent).
func LimitOf(p api.PageParams) int {
	if p.Limit == nil {
		return api.DefaultLimit
	}
	return *p.Limit
}
