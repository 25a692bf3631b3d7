// Package openapi builds the OpenAPI 3.1 document of the routes a web.Server registered
// (their web.Op: types, roles, problems, preconditions) and serves it at /openapi.json.
package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/web"
)

// tagDocs describes each resource tag.
var tagDocs = map[string]string{
	"Runs":        "A run is the lease of one piece of agent work on one subject: enqueue, claim, read, cancel, continue.",
	"Attempts":    "An attempt is one claim of a run: the holder heartbeats, moves its phase, releases or completes it under its fencing token; admins and runtimes read attempts and the change feed.",
	"Checkpoints": "Points an attempt can resume from, appended under the lease.",
	"Calls":       "The model, tool and HTTP calls an attempt makes, recorded as they start and finished once.",
	"Decisions":   "Decisions a holder asks a person for, and the admins' inbox that answers them.",
	"Delegations": "Child runs an attempt delegates to sub-agents.",
	"Releases":    "Agent releases and adapter versions the runtimes verified; a claim names an active one.",
	"Projects":    "The tenant's workspaces: whether their runs are offered, and how long their history is kept.",
	"Locks":       "Task run locks: one holder per agent and task.",
	"Schedules":   "Recurring work: a run enqueued at every firing of a cron expression in a time zone, once per firing across replicas.",
	"Webhooks":    "Signed notifications of the tenant's events (Standard Webhooks) to endpoints admins register, and their deliveries.",
	"Insights":    "Aggregate history for admins over a bounded window: runs and attempts ended, attempts per run, time to first claim, calls per target, decisions, leases lost.",
	"System":      "Health, readiness, metrics and this document; no key needed.",
}

// infoDescription is the document's introduction: the conventions every operation shares.
const infoDescription = `Leases agent work and records every execution attempt: checkpoints, model and tool calls, human decisions, sub-agent delegations.

Conventions:
- Authentication: ` + "`Authorization: Bearer <key>`" + ` with a key from ` + "`ledger keys create`" + `; the tenant comes only from the key. Roles: runtime and admin (each operation lists who may call it in x-roles).
- Errors are RFC 9457 problems (application/problem+json) with a stable ` + "`code`" + `; each operation lists the codes it can answer, by status. A 400 lists every invalid field.
- Times are RFC 3339 UTC with exactly three fractional digits (2026-12-01T08:26:03.900Z); a time outside 0001-01-01..9999-12-31 UTC is refused.
- Enumerations are lowercase snake_case strings.
- Identifiers (project, subject, kind, agent, idempotency key, release id, adapter version, holder, task, model profile) are 1 to the stated length in UTF-16 code units (maxLength counts characters, so a character outside the Basic Multilingual Plane counts twice against it), case-sensitive, without control characters or leading or trailing white space, not "." or ".."; one used as a path segment has no "/".
- Subjects serialise runs across all projects of a tenant: at most one run of a subject is leased at a time.
- Release ids are one namespace across tenants: the first tenant to register an id owns it (use a tenant prefix or a content hash).
- Mutable resources carry a strong ETag; admin updates need If-Match (428 without, 412 when stale); a GET with If-None-Match naming the current ETag answers 304. HEAD answers wherever GET does, without the body.
- A path asked with a method none of its operations has answers 405 method_not_allowed (a problem) with Allow listing the methods it has. Request bodies must be application/json (or a +json type), else 415 unsupported_media_type; unknown query parameters are 400, and so is one given twice unless it is a list (an array parameter: repeat it, one item each, as notAgentId=a&notAgentId=b). A body nests at most 64 levels (the arrays and objects open at once, the body's own object counting as the first); a deeper one is 400 invalid_request.
- Collections are {"items": [...], "nextCursor": "..."}: pass nextCursor as ?cursor= for the next page; it is absent on the last one.
- Rows purged by retention no longer appear anywhere, the changedSince feed included.`

// Document builds the OpenAPI 3.1 document of every route registered through s.Route.
func Document(s *web.Server) map[string]any {
	b := &docBuilder{schemas: map[string]any{}, types: map[string]reflect.Type{}}
	b.ref(reflect.TypeOf(api.Problem{}))
	paths := map[string]map[string]any{}
	tags := map[string]bool{}
	for _, o := range s.Documented() {
		p := openAPIPath(o.Path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(o.Method)] = b.operation(o)
		if o.Method == http.MethodGet {
			paths[p]["head"] = headDoc(paths[p]["get"].(map[string]any))
		}
		tags[o.Op.Tag] = true
	}
	var tagList []any
	for _, name := range slices.Sorted(maps.Keys(tags)) {
		tagList = append(tagList, map[string]any{"name": name, "description": tagDocs[name]})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "ledger",
			"version":     s.Version(),
			"summary":     "The attempt ledger: leases agent work and records every execution attempt.",
			"description": infoDescription,
			// The repository carries no licence grant: all rights are reserved.
			"license": map[string]any{"name": "Proprietary (all rights reserved)", "identifier": "LicenseRef-Proprietary"},
		},
		"servers": []any{map[string]any{"url": "{scheme}://{host}", "description": "Where ledger serve listens.",
			"variables": map[string]any{
				"scheme": map[string]any{"default": "http", "enum": []any{"http", "https"}},
				"host":   map[string]any{"default": "localhost:8080", "description": "Host and port (ledger serve's default address is :8080)."},
			}}},
		"tags":     tagList,
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"schemas": b.schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "An API key from `ledger keys create`."},
			},
			"headers": map[string]any{
				"X-Request-Id": map[string]any{
					"description": "The request's id (the client's X-Request-Id when it is at most 128 characters of [A-Za-z0-9._:-], else a fresh one); also the problem's instance.",
					"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": 128},
				},
			},
		},
	}
}

// docBuilder collects the component schemas while operations are documented.
type docBuilder struct {
	schemas map[string]any
	types   map[string]reflect.Type
}

func (b *docBuilder) operation(o web.Operation) map[string]any {
	op := o.Op
	doc := map[string]any{"operationId": op.ID, "summary": op.Summary, "tags": []any{op.Tag}}
	desc := op.Description
	if len(op.Roles) > 0 {
		desc = strings.TrimSpace(desc + "\n\nRoles: " + strings.Join(op.Roles, ", ") + ".")
	}
	if desc == "" {
		desc = op.Summary + "."
	}
	doc["description"] = desc
	var params []any
	for _, name := range web.PathParams(o.Path) {
		rule, ok := web.PathParamRule(name)
		if !ok {
			panic("web: path parameter " + name + " of " + o.Path + " has no rule in pathParamRules")
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": pathParamSchema(rule)})
	}
	if op.Query != nil {
		params = append(params, b.queryParams(reflect.TypeOf(op.Query))...)
	}
	if op.IfMatch.Takes() {
		params = append(params, map[string]any{"name": "If-Match", "in": "header", "required": op.IfMatch.Requires(),
			"description": ifMatchDocs[op.IfMatch], "schema": map[string]any{"type": "string", "minLength": 1}})
	}
	for _, name := range slices.Sorted(maps.Keys(op.RequestHeaders)) {
		params = append(params, map[string]any{"name": name, "in": "header", "required": false,
			"description": op.RequestHeaders[name], "schema": map[string]any{"type": "string"}})
	}
	if o.Method == http.MethodGet && op.ETag {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
			"description": "ETags the caller holds (a list, or *): 304 without a body when one is current.",
			"schema":      map[string]any{"type": "string", "minLength": 1}})
	}
	if len(params) > 0 {
		doc["parameters"] = params
	}
	if op.Body != nil {
		media := map[string]any{"schema": b.ref(reflect.TypeOf(op.Body))}
		if op.Example != nil {
			media["example"] = op.Example
		}
		doc["requestBody"] = map[string]any{"required": !op.BodyOptional, "content": map[string]any{"application/json": media}}
	}

	responses := map[string]any{}
	for _, st := range append([]int{op.Status}, op.AlsoStatus...) {
		responses[strconv.Itoa(st)] = b.success(op, st)
	}
	codes := append([]api.ProblemCode{}, op.Problems...)
	if !op.Public {
		codes = append(codes, api.CodeUnauthorized, api.CodeRateLimited, api.CodeDatabaseUnavailable, api.CodeInternal)
		if restricted(op.Roles) {
			codes = append(codes, api.CodeForbidden)
		}
		doc["security"] = []any{map[string]any{"bearer": []any{}}}
		if len(op.Roles) > 0 {
			doc["x-roles"] = op.Roles
		}
	} else {
		doc["security"] = []any{}
	}
	// Every route refuses unknown query parameters; any request whose Content-Length
	// passes the server's body limit is refused before routing, whatever its route.
	codes = append(codes, api.CodeInvalidRequest, api.CodeBodyTooLarge)
	if code, ok := web.RefusedWrite(o.Method); ok {
		codes = append(codes, code)
	}
	if op.Body != nil {
		codes = append(codes, api.CodeUnsupportedMediaType)
	}
	if o.Method == http.MethodGet && op.ETag {
		responses["304"] = map[string]any{
			"description": "Not Modified: If-None-Match names the current ETag.",
			"headers": map[string]any{"X-Request-Id": requestIDHeader, "ETag": map[string]any{"required": true,
				"description": "The current entity tag.", "schema": etagSchema()}},
		}
	}
	if op.IfMatch.Takes() {
		codes = append(codes, api.CodePreconditionFailed)
		if op.IfMatch.MayAnswer428() {
			codes = append(codes, api.CodePreconditionRequired)
		}
	}
	byStatus := map[int][]string{}
	for _, c := range codes {
		st := c.Status()
		if !slices.Contains(byStatus[st], string(c)) {
			byStatus[st] = append(byStatus[st], string(c))
		}
	}
	for st, cs := range byStatus {
		sort.Strings(cs)
		responses[strconv.Itoa(st)] = problemResponse(st, cs)
	}
	doc["responses"] = responses
	return doc
}

// ifMatchDocs describes the If-Match header of a route by its mode.
var ifMatchDocs = map[ifmatch.Mode]string{
	ifmatch.Optional: ifMatchForms + " Optional: without it the change is made whatever the current version.",
	ifmatch.Required: ifMatchForms,
	ifmatch.ToUpdate: ifMatchForms + " Not sent to create (412 if it is: there is no current version); required to change " +
		"an existing resource (428 without it).",
}

const ifMatchForms = "The ETag of the version being changed (a list matches when any tag is current; * matches any version; weak tags never match)."

// restricted reports whether roles exclude some role, so that a key can be refused (403).
func restricted(roles []string) bool {
	return len(roles) > 0 && !(slices.Contains(roles, "runtime") && slices.Contains(roles, "admin"))
}

var requestIDHeader = map[string]any{"$ref": "#/components/headers/X-Request-Id"}

func (b *docBuilder) success(op web.Op, st int) map[string]any {
	r := map[string]any{"description": http.StatusText(st)}
	headers := map[string]any{"X-Request-Id": requestIDHeader}
	if st != http.StatusNoContent {
		switch {
		case op.Response != nil:
			r["content"] = map[string]any{"application/json": map[string]any{"schema": b.ref(reflect.TypeOf(op.Response))}}
		case op.RawResponse == "application/json":
			r["content"] = map[string]any{op.RawResponse: map[string]any{"schema": map[string]any{"type": "object"}}}
		case op.RawResponse != "":
			r["content"] = map[string]any{op.RawResponse: map[string]any{"schema": map[string]any{"type": "string"}}}
		}
		if op.ETag {
			headers["ETag"] = map[string]any{"required": true, "description": "The resource's strong entity tag (its row version).",
				"schema": etagSchema()}
		}
	}
	if st == http.StatusCreated {
		headers["Location"] = map[string]any{"required": true, "description": "The path of the created resource (path-escaped).",
			"schema": map[string]any{"type": "string", "minLength": 1}}
	}
	for name, d := range op.Headers {
		headers[name] = map[string]any{"required": false, "description": d, "schema": map[string]any{"type": "string"}}
	}
	if st == http.StatusNoContent && op.RetryAfter {
		headers["Retry-After"] = retryAfterHeader(false, "Sent when the tenant's budget of leased runs, or of waiting claims, holds the claim back: seconds to wait before claiming again.")
	}
	r["headers"] = headers
	return r
}

func etagSchema() map[string]any {
	return map[string]any{"type": "string", "pattern": `^"[0-9a-f]{16}"$`}
}

// headDoc is the HEAD operation of a GET: the same answers without their content.
func headDoc(get map[string]any) map[string]any {
	head := map[string]any{}
	for k, v := range get {
		head[k] = v
	}
	head["operationId"] = get["operationId"].(string) + "Head"
	head["summary"] = "Headers of: " + get["summary"].(string)
	head["description"] = "The answer of " + get["operationId"].(string) + " without its content."
	responses := map[string]any{}
	for st, r := range get["responses"].(map[string]any) {
		rm := map[string]any{}
		for k, v := range r.(map[string]any) {
			if k != "content" && k != "x-problem-codes" {
				rm[k] = v
			}
		}
		responses[st] = rm
	}
	head["responses"] = responses
	return head
}

func retryAfterHeader(required bool, desc string) map[string]any {
	return map[string]any{"required": required, "description": desc, "schema": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}
}

// problemResponse documents the problems of one status an operation can answer: the
// Problem schema, the codes (x-problem-codes and the description), and an example.
func problemResponse(st int, codes []string) map[string]any {
	headers := map[string]any{"X-Request-Id": requestIDHeader}
	switch st {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		headers["Retry-After"] = retryAfterHeader(true, "Seconds to wait before retrying.")
	case http.StatusUnauthorized:
		headers["WWW-Authenticate"] = map[string]any{"required": false, "description": "Bearer realm=\"ledger\" when the key is missing or unknown.",
			"schema": map[string]any{"type": "string"}}
	}
	example := map[string]any{
		"type": api.ProblemType(api.ProblemCode(codes[0])), "title": http.StatusText(st), "status": st, "code": codes[0],
		"detail": problemExampleDetail(codes[0]), "instance": "6f1c7c39-2b1e-4d8a-9c61-1d2f3b4a5c6d",
	}
	if codes[0] == string(api.CodeInvalidRequest) {
		example["errors"] = []any{map[string]any{"field": "subject", "reason": "is required"}}
	}
	return map[string]any{
		"description": http.StatusText(st) + ": " + strings.Join(codes, ", "),
		"headers":     headers,
		"content": map[string]any{"application/problem+json": map[string]any{
			"schema":  map[string]any{"$ref": "#/components/schemas/Problem"},
			"example": example,
		}},
		// The codes this operation answers with this status (also in the description): the
		// tests' contract check holds every problem to them.
		"x-problem-codes": codes,
	}
}

func problemExampleDetail(code string) string {
	switch api.ProblemCode(code) {
	case api.CodeInvalidRequest:
		return "the request has invalid fields"
	case api.CodeUnauthorized:
		return "missing or invalid API key"
	case api.CodeStaleLease:
		return "the lease has moved on: fencing token 3 is older than the run's epoch 4"
	case api.CodeInternal:
		return "internal error"
	}
	return strings.ReplaceAll(code, "_", " ")
}

func uuidSchema() map[string]any { return map[string]any{"type": "string", "format": "uuid"} }

// pathParamSchema is a path parameter's schema in the document.
func pathParamSchema(p web.PathParam) map[string]any {
	if p.UUID {
		return uuidSchema()
	}
	// An identifier of 1..max characters that is also a path segment (no "/").
	return map[string]any{"type": "string", "minLength": 1, "maxLength": p.Max, "pattern": "^[^/]*$"}
}

func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// queryParams documents the query parameters of a parameter struct.
func (b *docBuilder) queryParams(t reflect.Type) []any {
	var out []any
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, b.queryParams(f.Type)...)
			continue
		}
		name := f.Tag.Get("query")
		if name == "" {
			continue
		}
		rules := parseRules(api.ExpandLimitTags(f.Tag.Get("validate")))
		sch := b.valueSchema(f.Type, rules, f.Tag)
		p := map[string]any{"name": name, "in": "query", "schema": sch, "required": rules.required}
		if f.Type.Kind() == reflect.Slice {
			// A list is the parameter repeated, one item each: notAgentId=a&notAgentId=b.
			p["style"], p["explode"] = "form", true
		}
		if d := f.Tag.Get("doc"); d != "" {
			p["description"] = d
		}
		out = append(out, p)
	}
	return out
}

var (
	timeType = reflect.TypeOf(api.Time{})
	uuidType = reflect.TypeOf(uuid.UUID{})
	rawType  = reflect.TypeOf(json.RawMessage{})
	enumType = reflect.TypeOf((*api.Enum)(nil)).Elem()
)

// ref returns the schema of a type: a $ref to a component for the api package's structs and
// enumerations (adding the component), an inline schema for the rest.
func (b *docBuilder) ref(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wire := t.PkgPath() == reflect.TypeOf(api.Run{}).PkgPath()
	if t.Kind() == reflect.Struct && !wire && t != uuidType {
		panic("web: " + t.String() + " is not a type of the api package: the document describes only the wire types")
	}
	if !wire || t == timeType || (t.Kind() != reflect.Struct && !t.Implements(enumType)) {
		return b.inline(t)
	}
	name := schemaName(t)
	if prev, ok := b.types[name]; ok {
		if prev != t {
			panic(fmt.Sprintf("web: two types are documented as %s: %v and %v", name, prev, t))
		}
	} else {
		b.types[name] = t
		b.schemas[name] = map[string]any{} // guards recursion
		b.schemas[name] = b.inline(t)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// schemaName is a type's component name: its Go name, and Page[T] is TPage.
func schemaName(t reflect.Type) string {
	base, args, generic := strings.Cut(t.Name(), "[")
	if !generic {
		return base
	}
	arg := strings.TrimSuffix(args, "]")
	return arg[strings.LastIndexAny(arg, "./")+1:] + base
}

// inline is the schema of a type itself.
func (b *docBuilder) inline(t reflect.Type) map[string]any {
	if t.Implements(enumType) {
		values := reflect.Zero(t).Interface().(api.Enum).EnumValues()
		// x-enum-varnames pins the constant names code generators give the values (the
		// type's name, then the value in Pascal case); without it oapi-codegen names them
		// bare (Queued) and renames them when a later value clashes.
		names := make([]string, len(values))
		for i, v := range values {
			names[i] = t.Name() + pascal(v)
		}
		return map[string]any{"type": "string", "enum": values, "x-enum-varnames": names}
	}
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case uuidType:
		return uuidSchema()
	case rawType:
		return map[string]any{"description": "Any JSON value."}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int32:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Int:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": b.ref(t.Elem())}
	case reflect.Struct:
		return b.object(t)
	}
	panic("web: no schema for type " + t.String())
}

// oneOfer is a struct whose raw JSON members hold one of several types (api.TimelineEntry).
type oneOfer interface{ OneOf() map[string][]any }

// object is the schema of a struct: its JSON members (embedded structs' flattened), the
// ones without omitempty required, and no other member allowed.
func (b *docBuilder) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	b.members(t, props, &required)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sort.Strings(required)
		out["required"] = required
	}
	return out
}

func (b *docBuilder) members(t reflect.Type, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			b.members(f.Type, props, required)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		rules := parseRules(api.ExpandLimitTags(f.Tag.Get("validate")))
		sch := b.valueSchema(f.Type, rules, f.Tag)
		if o, ok := reflect.Zero(t).Interface().(oneOfer); ok && o.OneOf()[name] != nil {
			var refs []any
			for _, v := range o.OneOf()[name] {
				refs = append(refs, b.ref(reflect.TypeOf(v)))
			}
			sch = map[string]any{"oneOf": refs}
		}
		// A pointer that is always sent may be null; a required request member may not; an
		// optional one tagged nullable may be absent or null, which mean different things.
		if f.Type.Kind() == reflect.Pointer && (!omitempty && !rules.required || f.Tag.Get("nullable") == "true") {
			sch = nullable(sch)
		}
		props[name] = sch
		if !omitempty {
			*required = append(*required, name)
		}
	}
}

// valueSchema is the schema of one member or parameter: its type's, with the bounds of its
// validate rules, its default and its description.
func (b *docBuilder) valueSchema(t reflect.Type, rules rules, tag reflect.StructTag) map[string]any {
	sch := b.ref(t)
	if _, isRef := sch["$ref"]; !isRef {
		sch = cloneMap(sch)
		rules.apply(sch)
	}
	if d := tag.Get("default"); d != "" {
		sch = withSibling(sch, "default", typedDefault(t, d))
	}
	if d := tag.Get("doc"); d != "" {
		sch = withSibling(sch, "description", d)
	}
	return sch
}

// withSibling adds a keyword beside a schema (beside a $ref too: OpenAPI 3.1 allows it).
func withSibling(sch map[string]any, k string, v any) map[string]any {
	out := cloneMap(sch)
	out[k] = v
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// nullable lets a schema also be null: type [X, "null"] for a typed schema, oneOf with null
// otherwise.
func nullable(sch map[string]any) map[string]any {
	if ty, ok := sch["type"].(string); ok {
		out := cloneMap(sch)
		out["type"] = []any{ty, "null"}
		return out
	}
	return map[string]any{"oneOf": []any{sch, map[string]any{"type": "null"}}}
}

func typedDefault(t reflect.Type, d string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(enumType) {
		return d
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.Atoi(d)
		if err != nil {
			panic("web: default " + d + " of an integer")
		}
		return n
	case reflect.Bool:
		return d == "true"
	}
	return d
}

// rules are the parts of a validate tag (validator/v10 syntax) the document states.
type rules struct {
	required bool
	min, max *int
	length   *int
	ident    *int
	segment  bool
	hex      bool
	errcode  bool
	// items are the rules after dive, for a slice's items.
	items *rules
}

func parseRules(tag string) rules {
	var r rules
	parts := strings.Split(tag, ",")
	for i, p := range parts {
		if p == "" {
			continue
		}
		name, arg, _ := strings.Cut(p, "=")
		n, err := strconv.Atoi(arg)
		num := func() *int {
			if err != nil {
				panic("web: validate rule " + p + " needs a number")
			}
			return &n
		}
		switch name {
		case "required":
			r.required = true
		case "min", "gte":
			r.min = num()
		case "max", "lte":
			r.max = num()
		case "len":
			r.length = num()
		case "ident":
			r.ident = num()
		case "segment":
			r.ident, r.segment = num(), true
		case "hexadecimal":
			r.hex = true
		case "errcode":
			r.errcode = true
		case "dive":
			items := parseRules(strings.Join(parts[i+1:], ","))
			r.items = &items
			return r
		case "omitempty":
		default:
			panic("web: validate rule " + p + " is not documented; teach parseRules about it")
		}
	}
	return r
}

// apply writes the rules into a schema by its type.
func (r rules) apply(sch map[string]any) {
	ty, _ := sch["type"].(string)
	switch ty {
	case "string":
		if r.required {
			sch["minLength"] = 1
		}
		if r.ident != nil {
			sch["minLength"], sch["maxLength"] = 1, *r.ident
		}
		if r.min != nil {
			sch["minLength"] = *r.min
		}
		if r.max != nil {
			sch["maxLength"] = *r.max
		}
		if r.length != nil {
			sch["minLength"], sch["maxLength"] = *r.length, *r.length
		}
		if r.hex {
			sch["pattern"] = "^(0[xX])?[0-9a-fA-F]+$"
		}
		if r.segment {
			sch["pattern"] = "^[^/]*$"
		}
		if r.errcode {
			sch["minLength"], sch["maxLength"], sch["pattern"] = 1, 64, "^[a-z0-9_.-]+$"
		}
	case "integer", "number":
		if r.min != nil {
			sch["minimum"] = *r.min
		}
		if r.max != nil {
			sch["maximum"] = *r.max
		}
	case "array":
		if r.min != nil {
			sch["minItems"] = *r.min
		}
		if r.max != nil {
			sch["maxItems"] = *r.max
		}
		if r.items != nil {
			if items, ok := sch["items"].(map[string]any); ok {
				if _, isRef := items["$ref"]; !isRef {
					items = cloneMap(items)
					r.items.apply(items)
					sch["items"] = items
				}
			}
		}
	}
}

// pascal writes a snake_case wire name in Pascal case: awaiting_decision -> AwaitingDecision.
func pascal(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
