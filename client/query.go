package client

import (
	"context"
	"encoding"
	"fmt"
	"iter"
	"net/url"
	"reflect"
	"strconv"

	"github.com/ledger-dev/ledger/api"
)

// queryOf encodes a parameters struct of package api (fields tagged `query:"name"`, pointers
// for optional ones, slices for lists, embedded structs such as api.PageParams flattened) as
// URL values. Absent (nil) members are left out, so the server applies its defaults; a list
// is its parameter repeated.
func queryOf(params any) url.Values {
	q := url.Values{}
	if params != nil {
		addQuery(q, reflect.ValueOf(params))
	}
	return q
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

func addQuery(q url.Values, v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			addQuery(q, fv)
			continue
		}
		name := f.Tag.Get("query")
		if name == "" || !f.IsExported() {
			continue
		}
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Slice {
			// A list goes as the parameter repeated, one item each, in order (the server's
			// form, explode): notAgentId=a&notAgentId=b.
			for j := range fv.Len() {
				if s, ok := queryText(fv.Index(j)); ok {
					q.Add(name, s)
				}
			}
			continue
		}
		if s, ok := queryText(fv); ok {
			q.Set(name, s)
		}
	}
}

func queryText(v reflect.Value) (string, bool) {
	m := v
	if !m.Type().Implements(textMarshaler) && v.CanAddr() {
		m = v.Addr() // a marshaler with a pointer receiver
	}
	if m.Type().Implements(textMarshaler) {
		b, err := m.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	}
	panic(fmt.Sprintf("client: query parameter of unsupported type %s", v.Type()))
}

// list reads one page of a collection.
func list[T any](ctx context.Context, cl *Client, op string, params any, pathParams ...string) (api.Page[T], error) {
	var page api.Page[T]
	_, err := cl.do(ctx, call{op: op, params: pathParams, query: queryOf(params), out: &page})
	return page, err
}

// pages iterates over a collection's items, following nextCursor from the first page that
// read(ctx, nil) reads. The iteration stops at the first error, which it yields.
func pages[T any](ctx context.Context, read func(ctx context.Context, cursor *string) (api.Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var cursor *string
		for {
			page, err := read(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" || len(page.Items) == 0 {
				return
			}
			c := page.NextCursor
			cursor = &c
		}
	}
}
