package web

import (
	"encoding/json"
	"net/http"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
)

// Op documents a route, and its Roles are also what the route enforces: the document and
// the authorisation cannot drift apart.
type Op struct {
	Summary string
	// Public routes need no key. Otherwise Roles lists the roles allowed (empty: any role).
	Public bool
	Roles  []string
	// Body is the request body's type (a struct value), nil for none.
	Body any
	// BodyOptional allows an empty body.
	BodyOptional bool
	// Query is the query parameters' struct (an api.…Params value), nil for none.
	Query any
	// Status is the success status; Response its body's type (nil for none).
	Status int
	// AlsoStatus lists further success statuses answered with the same body, such as the
	// 201 of a PUT that creates (with Location) beside the 200 of one that updates.
	AlsoStatus []int
	Response   any
	// RawResponse is the content type of a body the schema does not describe.
	RawResponse string
	// ETag says the success response carries an ETag; IfMatch that the request takes one
	// (Required: 428 without it).
	ETag            bool
	IfMatch         bool
	IfMatchRequired bool
	// Problems lists the codes this route can answer besides the common ones.
	Problems []apperr.Code
}

type operation struct {
	method, path string
	op           Op
}

// Authenticator returns the middleware that admits a request to a route with these roles.
type Authenticator func(roles ...string) echo.MiddlewareFunc

// Auth is set by the wiring code before routes with roles are added.
func (s *Server) SetAuth(a Authenticator) { s.auth = a }

// Route registers a handler and its documentation. Non-public routes get the authenticator.
func (s *Server) Route(method, path string, op Op, h echo.HandlerFunc) {
	var mw []echo.MiddlewareFunc
	if !op.Public {
		if s.auth == nil {
			panic("web: route " + path + " needs authentication but no authenticator is set")
		}
		mw = append(mw, s.auth(op.Roles...))
	}
	s.add(method, path, op, h, mw)
	s.ops = append(s.ops, operation{method: method, path: path, op: op})
}

// Operations lists the documented routes as "METHOD path" in Echo's path syntax.
func (s *Server) Operations() []string {
	out := make([]string, 0, len(s.ops))
	for _, o := range s.ops {
		out = append(out, o.method+" "+o.path)
	}
	return out
}

// OpenAPI builds the OpenAPI 3.1 document of every route registered through Route.
func (s *Server) OpenAPI() map[string]any {
	schemas := map[string]any{}
	// Problem's field errors are a named struct, added to schemas as it is described.
	schemas["Problem"] = schemaOf(reflect.TypeOf(Problem{}), schemas)
	paths := map[string]map[string]any{}
	for _, o := range s.ops {
		p := openAPIPath(o.path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(o.method)] = s.operationDoc(o, schemas)
		if o.method == http.MethodGet {
			paths[p]["head"] = headDoc(paths[p]["get"].(map[string]any))
		}
	}
	for _, sch := range schemas {
		delete(sch.(map[string]any), goTypeKey)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "ledger",
			"version": s.version,
			"description": "Leases agent work and records every execution attempt. Errors are RFC 9457 problems " +
				"with a stable code. Purged rows (retention) no longer appear in changedSince feeds.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "An API key from `ledger keys create`."},
			},
		},
	}
	return doc
}

func (s *Server) operationDoc(o operation, schemas map[string]any) map[string]any {
	op := o.op
	doc := map[string]any{"summary": op.Summary, "operationId": operationID(o.method, o.path)}
	var params []any
	for _, name := range pathParams(o.path) {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	if op.Query != nil {
		params = append(params, queryParams(reflect.TypeOf(op.Query), schemas)...)
	}
	if op.IfMatch {
		params = append(params, map[string]any{"name": "If-Match", "in": "header", "required": op.IfMatchRequired,
			"description": "The ETag of the version being changed.", "schema": map[string]any{"type": "string"}})
	}
	if o.method == http.MethodGet && op.ETag {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
			"description": "ETags the caller holds: 304 without a body when one is current.", "schema": map[string]any{"type": "string"}})
	}
	if len(params) > 0 {
		doc["parameters"] = params
	}
	if op.Body != nil {
		doc["requestBody"] = map[string]any{
			"required": !op.BodyOptional,
			"content":  map[string]any{"application/json": map[string]any{"schema": schemaRef(reflect.TypeOf(op.Body), schemas)}},
		}
	}
	responses := map[string]any{}
	success := map[string]any{"description": http.StatusText(op.Status)}
	switch {
	case op.Response != nil:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": schemaRef(reflect.TypeOf(op.Response), schemas)}}
	case op.RawResponse != "":
		success["content"] = map[string]any{op.RawResponse: map[string]any{}}
	}
	if op.ETag {
		success["headers"] = map[string]any{"ETag": map[string]any{"schema": map[string]any{"type": "string"}}}
	}
	responses[itoa(op.Status)] = success
	for _, st := range op.AlsoStatus {
		also := map[string]any{}
		for k, v := range success {
			also[k] = v
		}
		also["description"] = http.StatusText(st)
		if st == http.StatusNoContent {
			delete(also, "content")
			delete(also, "headers")
		}
		if st == http.StatusCreated {
			headers := map[string]any{"Location": map[string]any{"schema": map[string]any{"type": "string"}}}
			if op.ETag {
				headers["ETag"] = map[string]any{"schema": map[string]any{"type": "string"}}
			}
			also["headers"] = headers
		}
		responses[itoa(st)] = also
	}
	codes := append([]apperr.Code{}, op.Problems...)
	if !op.Public {
		codes = append(codes, apperr.Unauthorized, apperr.Forbidden, apperr.RateLimited, apperr.DatabaseUnavailable, apperr.Internal)
		doc["security"] = []any{map[string]any{"bearer": []any{}}}
		if len(op.Roles) > 0 {
			doc["x-roles"] = op.Roles
		}
	}
	// Every route refuses unknown query parameters.
	codes = append(codes, apperr.Invalid)
	if op.Body != nil {
		codes = append(codes, apperr.BodyTooLarge, apperr.UnsupportedMediaType)
	}
	if o.method == http.MethodGet && op.ETag {
		responses["304"] = map[string]any{
			"description": "Not Modified: If-None-Match names the current ETag",
			"headers":     map[string]any{"ETag": map[string]any{"schema": map[string]any{"type": "string"}}},
		}
	}
	if op.IfMatch {
		codes = append(codes, apperr.PreconditionFailed)
		if op.IfMatchRequired {
			codes = append(codes, apperr.PreconditionRequired)
		}
	}
	byStatus := map[int][]string{}
	for _, c := range codes {
		st := StatusOf(c)
		if !contains(byStatus[st], string(c)) {
			byStatus[st] = append(byStatus[st], string(c))
		}
	}
	for st, cs := range byStatus {
		sort.Strings(cs)
		responses[itoa(st)] = map[string]any{
			"description":     http.StatusText(st) + ": " + strings.Join(cs, ", "),
			"content":         map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}},
			"x-problem-codes": cs,
		}
	}
	doc["responses"] = responses
	return doc
}

// headDoc is the HEAD operation of a GET: the same answers without their content.
func headDoc(get map[string]any) map[string]any {
	head := map[string]any{}
	for k, v := range get {
		head[k] = v
	}
	head["operationId"] = get["operationId"].(string) + "Head"
	head["summary"] = "Headers of: " + get["summary"].(string)
	responses := map[string]any{}
	for st, r := range get["responses"].(map[string]any) {
		rm := map[string]any{}
		for k, v := range r.(map[string]any) {
			if k != "content" {
				rm[k] = v
			}
		}
		responses[st] = rm
	}
	head["responses"] = responses
	return head
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

func pathParams(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if strings.HasPrefix(s, ":") {
			out = append(out, s[1:])
		}
	}
	return out
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, s := range strings.Split(path, "/") {
		s = strings.TrimPrefix(strings.Trim(s, "{}"), ":")
		if s == "" {
			continue
		}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '_' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

var (
	timeType    = reflect.TypeOf(time.Time{})
	apiTimeType = reflect.TypeOf(api.Time{})
	uuidType    = reflect.TypeOf(uuid.UUID{})
	// nullUUIDType marshals itself (MarshalJSON), so reflection would describe it wrongly.
	nullUUIDType = reflect.TypeOf(uuid.NullUUID{})
	rawType      = reflect.TypeOf(json.RawMessage{})
)

// schemaRef returns a $ref to a named struct schema (adding it) or an inline schema.
func schemaRef(t reflect.Type, schemas map[string]any) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t != timeType && t != apiTimeType && t != nullUUIDType && t.Name() != "" {
		name := schemaName(t)
		if existing, ok := schemas[name].(map[string]any); ok && existing[goTypeKey] != t {
			// Two packages may name a type alike (history.Decision, decisions.Decision): the
			// second gets its package-qualified name instead of the first's schema.
			name = path.Base(t.PkgPath()) + "." + name
		}
		if _, ok := schemas[name]; !ok {
			schemas[name] = map[string]any{goTypeKey: t} // guards recursion
			sch := schemaOf(t, schemas)
			sch[goTypeKey] = t
			schemas[name] = sch
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return schemaOf(t, schemas)
}

// goTypeKey marks which Go type a component schema describes while the document is built;
// OpenAPI removes it before the document is served.
const goTypeKey = "x-go-type"

// schemaName is a type's component name in the characters OpenAPI allows
// (^[a-zA-Z0-9._-]+$): a generic instance Page[github.com/…/projects.Project] becomes
// Page_Project, which is also a valid JSON pointer segment for $ref.
func schemaName(t reflect.Type) string {
	base, args, generic := strings.Cut(t.Name(), "[")
	if !generic {
		return base
	}
	var b strings.Builder
	b.WriteString(base)
	for _, a := range strings.Split(strings.TrimSuffix(args, "]"), ",") {
		a = a[strings.LastIndexAny(a, "./")+1:]
		b.WriteString("_" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
				return r
			}
			return -1
		}, a))
	}
	return b.String()
}

// enumValuer is a stored-as-int enumeration that travels as strings (internal/enum).
type enumValuer interface{ EnumValues() []string }

// jsonDocument is a field that holds any JSON document.
type jsonDocument interface{ AnyJSON() }

func schemaOf(t reflect.Type, schemas map[string]any) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if ev, ok := reflect.Zero(t).Interface().(enumValuer); ok {
		return map[string]any{"type": "string", "enum": ev.EnumValues()}
	}
	if _, ok := reflect.Zero(t).Interface().(jsonDocument); ok {
		return map[string]any{"description": "any JSON value"}
	}
	switch {
	case t == timeType || t == apiTimeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case t == nullUUIDType:
		// NullUUID marshals as a UUID string or null, not as its struct fields.
		return map[string]any{"type": []string{"string", "null"}, "format": "uuid"}
	case t == rawType:
		return map[string]any{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaRef(t.Elem(), schemas)}
	case reflect.Map:
		return map[string]any{"type": "object"}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				if sub, ok := schemaOf(f.Type, schemas)["properties"].(map[string]any); ok {
					for k, v := range sub {
						props[k] = v
					}
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			ps := schemaRef(f.Type, schemas)
			if enum := f.Tag.Get("enum"); enum != "" {
				ps = map[string]any{"type": "string", "enum": strings.Split(enum, ",")}
			}
			props[name] = ps
			// Request fields are required when validated so; response fields when always sent.
			if strings.Contains(f.Tag.Get("validate"), "required") || (f.Tag.Get("validate") == "" && !strings.Contains(opts, "omitempty")) {
				required = append(required, name)
			}
		}
		out := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			sort.Strings(required)
			out["required"] = required
		}
		return out
	}
	return map[string]any{}
}

// queryParams documents the query parameters of a parameter struct.
func queryParams(t reflect.Type, schemas map[string]any) []any {
	var out []any
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, queryParams(f.Type, schemas)...)
			continue
		}
		name := f.Tag.Get("query")
		if name == "" {
			continue
		}
		p := map[string]any{"name": name, "in": "query", "schema": schemaRef(f.Type, schemas)}
		if d := f.Tag.Get("doc"); d != "" {
			p["description"] = d
		}
		if strings.Contains(f.Tag.Get("validate"), "required") {
			p["required"] = true
		}
		out = append(out, p)
	}
	return out
}
