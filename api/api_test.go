package api_test

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
)

// enums are one value of every enumeration, as a pointer so it can be decoded into.
func enums() []api.Enum {
	return []api.Enum{
		new(api.RunState), new(api.Band), new(api.AttemptState), new(api.Phase), new(api.CallKind),
		new(api.DecisionKind), new(api.ReleaseState), new(api.TimelineKind), new(api.RunOutcome),
		new(api.CompletionState), new(api.CallStatus), new(api.CallFinishStatus), new(api.DecisionStatus),
		new(api.AnswerStatus), new(api.DelegationStatus), new(api.InFlightPolicy), new(api.ScheduleOverlap),
		new(api.WebhookEvent), new(api.DeliveryStatus), new(api.UsageGroup), new(api.InsightBucket), new(api.InsightGroup),
		new(api.BulkAction), new(api.OperationState),
	}
}

// lenientEnums decode any string on purpose: a client keeps working when a newer server
// adds a value (api.ProblemCode's comment says why).
var lenientEnums = map[string]bool{"ProblemCode": true}

// Every enumeration the package declares (a type with an EnumValues method) is in enums(),
// so each refuses an undeclared name when it is decoded: one left out reached the
// database's CHECK constraint as 409 instead of 400 naming its field.
func TestEveryEnumIsChecked(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := maps.Clone(lenientEnums)
	for _, e := range enums() {
		checked[reflect.TypeOf(e).Elem().Name()] = true
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "EnumValues" {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if name := typ.(*ast.Ident).Name; !checked[name] {
				t.Errorf("api.%s is an enumeration that enums() does not check", name)
			}
		}
	}
}

func TestEnumsRoundTripTheirNamesAndRefuseOthers(t *testing.T) {
	t.Parallel()
	for _, e := range enums() {
		typ := reflect.TypeOf(e).Elem()
		names := e.EnumValues()
		if len(names) == 0 {
			t.Fatalf("%s lists no values", typ)
		}
		for _, name := range names {
			v := reflect.New(typ)
			if err := json.Unmarshal([]byte(strconv.Quote(name)), v.Interface()); err != nil {
				t.Fatalf("%s: decode %q: %v", typ, name, err)
			}
			got := v.Elem().Interface().(api.Enum)
			if !got.Valid() || got.String() != name {
				t.Fatalf("%s: %q decoded to %v (valid %v)", typ, name, got, got.Valid())
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != strconv.Quote(name) {
				t.Fatalf("%s: %q encodes as %s, %v", typ, name, b, err)
			}
		}
		for _, bad := range []string{`"nope"`, `"` + strings.ToUpper(names[0]) + `"`, `1`, `null`, `["` + names[0] + `"]`} {
			v := reflect.New(typ)
			err := json.Unmarshal([]byte(bad), v.Interface())
			var ve *api.ValueError
			if !errors.As(err, &ve) || ve.Reason != "must be one of: "+strings.Join(names, ", ") {
				t.Fatalf("%s: decode %s = %v, want a ValueError listing %v", typ, bad, err, names)
			}
		}
		if _, err := json.Marshal(reflect.New(typ).Elem().Interface()); typ.Kind() == reflect.String && err == nil {
			t.Fatalf("%s: the empty value encodes", typ)
		}
	}
	if _, err := json.Marshal(api.RunState(7)); err == nil {
		t.Fatal("an out-of-range run state encodes")
	}
	if api.CompleteCancelled.AttemptState() != api.AttemptCancelled || api.CompleteSucceeded.AttemptState() != api.AttemptSucceeded {
		t.Fatal("completion states do not map to attempt states")
	}
}

func TestTimeTravelsAsUTCMillisecondsAndStaysInBounds(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 9, 26, 3, 900_123_456, time.FixedZone("x", 3600))
	b, err := json.Marshal(api.NewTime(at))
	if err != nil || string(b) != `"2026-12-01T08:26:03.900Z"` {
		t.Fatalf("marshal %s, %v", b, err)
	}
	for _, ok := range []string{"2026-12-01T08:26:03Z", "2026-12-01T08:26:03.9+01:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z"} {
		var tm api.Time
		if err := json.Unmarshal([]byte(strconv.Quote(ok)), &tm); err != nil {
			t.Fatalf("decode %s: %v", ok, err)
		}
	}
	for in, reason := range map[string]string{
		`"9999-12-31T23:59:59-05:00"`: "is outside 0001-01-01..9999-12-31 UTC",
		`"0001-01-01T00:30:00+01:00"`: "is outside 0001-01-01..9999-12-31 UTC",
		`"2026-12-01 08:26:03Z"`:      "is not an RFC 3339 time",
		`"2026-12-01"`:                "is not an RFC 3339 time",
		`1700000000`:                  "is not an RFC 3339 time",
	} {
		var tm api.Time
		err := json.Unmarshal([]byte(in), &tm)
		var ve *api.ValueError
		if !errors.As(err, &ve) || ve.Reason != reason {
			t.Fatalf("decode %s = %v, want %q", in, err, reason)
		}
	}
	if _, err := json.Marshal(api.NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); err == nil {
		t.Fatal("a time past 9999 encodes")
	}
	var got api.Time
	if err := got.UnmarshalText([]byte("2026-12-01T09:26:03.9+01:00")); err != nil || got.String() != "2026-12-01T08:26:03.900Z" || got.Location() != time.UTC {
		t.Fatalf("UnmarshalText: %v %v", got, err)
	}
}

// TestDefaultTagsMatchTheConstants keeps the documented defaults (the `default` tags the
// OpenAPI document reads) equal to the values the server applies.
func TestDefaultTagsMatchTheConstants(t *testing.T) {
	t.Parallel()
	tag := func(v any, field string) string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		if !ok {
			t.Fatalf("%T has no field %s", v, field)
		}
		return f.Tag.Get("default")
	}
	for _, c := range []struct{ got, want string }{
		{tag(api.RunSpec{}, "Band"), api.DefaultBand.String()},
		{tag(api.RunSpec{}, "MaxAttempts"), strconv.Itoa(api.DefaultMaxAttempts)},
		{tag(api.RunSpec{}, "MaxCorrections"), strconv.Itoa(api.DefaultMaxCorrections)},
		{tag(api.PutProjectRequest{}, "RetentionDays"), strconv.Itoa(api.DefaultRetentionDays)},
		{tag(api.PageParams{}, "Limit"), strconv.Itoa(api.DefaultLimit)},
	} {
		if c.got != c.want {
			t.Errorf("default tag %q, constant %q", c.got, c.want)
		}
	}
}

func TestProblemCodesAreKnownAndDecodeLeniently(t *testing.T) {
	t.Parallel()
	seen := map[api.ProblemCode]bool{}
	for _, c := range api.ProblemCodes() {
		if !c.Valid() || seen[c] {
			t.Fatalf("code %q invalid or listed twice", c)
		}
		seen[c] = true
	}
	var p api.Problem
	if err := json.Unmarshal([]byte(`{"type":"urn:ledger:problem:new_code","title":"Conflict","status":409,"code":"new_code"}`), &p); err != nil || p.Code.Valid() {
		t.Fatalf("a newer server's code: %+v %v", p, err)
	}
}

func TestTimelineEntryDecodesItsItem(t *testing.T) {
	t.Parallel()
	e := api.TimelineEntry{Kind: api.TimelineCall, Item: json.RawMessage(`{"callId":"5b0e3a4c-1d2e-4f3a-8b5c-6d7e8f9a0b1c","sequence":3,"kind":"tool","status":"started"}`)}
	v, err := e.Decode()
	c, ok := v.(*api.Call)
	if err != nil || !ok || c.Sequence != 3 || c.Kind != api.CallTool || c.Status != api.CallStarted {
		t.Fatalf("decode: %#v %v", v, err)
	}
	if _, err := (api.TimelineEntry{Kind: 9}).Decode(); err == nil {
		t.Fatal("an unknown kind decodes")
	}
}

// TestRequestsRequireWhatTheyValidate keeps the two marks of a required request member in
// step: no omitempty (the OpenAPI document's required list) and a validate rule that demands
// it (what the server enforces), so a member is never documented optional and refused when
// absent, or the reverse.
func TestRequestsRequireWhatTheyValidate(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		api.RunSpec{}, api.EnqueueRequest{}, api.ClaimRequest{}, api.ContinueRequest{}, api.FencedRequest{},
		api.HeartbeatRequest{}, api.ReleaseAttemptRequest{}, api.CompleteAttemptRequest{}, api.PatchAttemptRequest{},
		api.LockRequest{}, api.CheckpointRequest{}, api.CallRequest{}, api.FinishCallRequest{}, api.DecisionRequest{},
		api.AnswerDecisionRequest{}, api.DelegationRequest{}, api.PutReleaseRequest{}, api.PutProjectRequest{},
	} {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if f.Anonymous {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no JSON name", typ.Name(), f.Name)
				continue
			}
			optional := strings.Contains(","+opts+",", ",omitempty,")
			demanded := slices.Contains(strings.Split(f.Tag.Get("validate"), ","), "required")
			if optional == demanded {
				t.Errorf("%s.%s: omitempty %v but validate %q", typ.Name(), name, optional, f.Tag.Get("validate"))
			}
		}
	}
}

// TestProblemStatusesComeFromOneTable: each code's status and title are its row of the
// table, and a code this version does not know is a 500.
func TestProblemStatusesComeFromOneTable(t *testing.T) {
	t.Parallel()
	for code, want := range map[api.ProblemCode]int{
		api.CodeInvalidRequest: 400, api.CodeMethodNotAllowed: 405, api.CodeLockHeld: 409, api.CodeBodyTooLarge: 413,
		api.CodeUnknownProject: 422, api.CodePreconditionRequired: 428, api.CodeRateLimited: 429,
		api.CodeDatabaseUnavailable: 503, "new_code": 500,
	} {
		if code.Status() != want || code.Title() != http.StatusText(want) {
			t.Errorf("%s: %d %q, want %d", code, code.Status(), code.Title(), want)
		}
	}
	for _, c := range api.ProblemCodes() {
		if s := c.Status(); s < 400 || s > 599 || (s == 500 && c != api.CodeInternal) {
			t.Errorf("%s has no row of its own: %d", c, s)
		}
	}
}
