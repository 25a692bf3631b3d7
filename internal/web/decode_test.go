package web

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/strictjson"
)

type childBody struct {
	Subject string `json:"subject" validate:"required,ident=8"`
	AgentID string `json:"agentId" validate:"required,segment=8"`
}

type embedded struct {
	Note string `json:"note"`
}

type strictBody struct {
	embedded
	FencingToken *int64          `json:"fencingToken" validate:"required,min=1"`
	Subject      string          `json:"subject" validate:"required,ident=8"`
	Sequence     *int64          `json:"sequence" validate:"omitempty,min=0"`
	DueAt        *time.Time      `json:"dueAt"`
	When         time.Time       `json:"when"`
	ID           *uuid.UUID      `json:"id"`
	Version      *uint64         `json:"version"`
	Input        json.RawMessage `json:"input"`
	Kinds        []string        `json:"kinds" validate:"omitempty,dive,ident=8"`
	Child        *childBody      `json:"child"`
	Children     []childBody     `json:"children" validate:"omitempty,dive"`
	Labels       map[string]int  `json:"labels"`
	Ignored      string          `json:"-"`
}

// fieldsOfBind binds body and returns the failing fields by name, or the problem when it
// lists none.
func fieldsOfBind(t *testing.T, body string) (map[string]string, *apperr.Error) {
	t.Helper()
	var dst strictBody
	err := Bind(ctxFor(http.MethodPost, "/", body, nil), &dst, false)
	if err == nil {
		return nil, nil
	}
	e, ok := apperr.As(err)
	if !ok || e.Code != api.CodeInvalidRequest {
		t.Fatalf("Bind(%s) = %v, want invalid_request", body, err)
	}
	out := map[string]string{}
	for _, f := range e.Fields {
		if _, dup := out[f.Field]; dup {
			t.Fatalf("Bind(%s) names %s twice: %+v", body, f.Field, e.Fields)
		}
		out[f.Field] = f.Reason
	}
	return out, e
}

func TestStrictDecoderListsEveryField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       map[string]string // field -> a fragment of its reason
	}{
		{"DuplicateTopLevel", `{"fencingToken":1,"subject":"a","subject":"b"}`, map[string]string{"subject": "more than once"}},
		{"DuplicateUnknown", `{"fencingToken":1,"subject":"a","zz":1,"zz":2}`, map[string]string{"zz": "more than once"}},
		{"CaseFoldedNameIsUnknown", `{"FENCINGTOKEN":1,"subject":"a"}`, map[string]string{"FENCINGTOKEN": "not a known field", "fencingToken": "required"}},
		{"SecondSpellingIsUnknown", `{"fencingToken":1,"subject":"a","Subject":"b"}`, map[string]string{"Subject": "not a known field"}},
		{"DuplicateNested", `{"fencingToken":1,"subject":"a","child":{"subject":"x","agentId":"g","agentId":"h"}}`, map[string]string{"child.agentId": "more than once"}},
		{"NestedExactNames", `{"fencingToken":1,"subject":"a","child":{"Subject":"x","agentId":"g"}}`, map[string]string{"child.Subject": "not a known field", "child.subject": "required"}},
		{"DuplicateInsideFreeJSON", `{"fencingToken":1,"subject":"a","input":{"a":[{"k":1,"k":2}]}}`, map[string]string{"input.a[0].k": "more than once"}},
		{"DuplicateInArrayOfObjects", `{"fencingToken":1,"subject":"a","children":[{"subject":"x","agentId":"g"},{"subject":"y","subject":"z","agentId":"g"}]}`, map[string]string{"children[1].subject": "more than once"}},
		{"EveryProblemAtOnce", `{"fencingToken":"one","sequence":"y","dueAt":"tomorrow","extra":1,"kinds":["ok",5," x"]}`, map[string]string{
			"fencingToken": "must be an integer", "subject": "is required", "sequence": "must be an integer", "dueAt": strictjson.NotRFC3339,
			"extra": "not a known field", "kinds[1]": "must be a string", "kinds[2]": "white space",
		}},
		// A required member that is given, as "" or 0, is not said to be missing.
		{"RequiredGivenEmpty", `{"fencingToken":1,"subject":"","child":{"subject":"","agentId":"g"}}`, map[string]string{
			"subject": "must not be empty", "child.subject": "must not be empty",
		}},
		{"RequiredGivenNull", `{"fencingToken":1,"subject":null}`, map[string]string{"subject": "is required"}},
		{"NumberNotInteger", `{"fencingToken":1.5,"subject":"a","sequence":2e3}`, map[string]string{"fencingToken": "must be an integer", "sequence": "must be an integer"}},
		{"NumberPastItsType", `{"fencingToken":9223372036854775808,"subject":"a","sequence":-9223372036854775809}`, map[string]string{
			"fencingToken": "must be at most 9223372036854775807", "sequence": "must be at least -9223372036854775808",
		}},
		{"TimeAfter9999UTC", `{"fencingToken":1,"subject":"a","dueAt":"9999-12-31T23:59:59-05:00"}`, map[string]string{"dueAt": strictjson.OutsideTimes}},
		{"TimeBeforeYear1UTC", `{"fencingToken":1,"subject":"a","when":"0001-01-01T00:00:00+01:00"}`, map[string]string{"when": strictjson.OutsideTimes}},
		{"TimeWithoutZone", `{"fencingToken":1,"subject":"a","dueAt":"2026-01-01T00:00:00"}`, map[string]string{"dueAt": strictjson.NotRFC3339}},
		{"BadUUID", `{"fencingToken":1,"subject":"a","id":"nope"}`, map[string]string{"id": "UUID"}},
		{"UnsignedPastBigint", `{"fencingToken":1,"subject":"a","version":18446744073709551615}`, map[string]string{"version": "at most"}},
		{"ObjectExpected", `{"fencingToken":1,"subject":"a","child":"x"}`, map[string]string{"child": "must be an object"}},
		{"ArrayExpected", `{"fencingToken":1,"subject":"a","kinds":"x"}`, map[string]string{"kinds": "must be an array"}},
		{"SegmentRefusesSlash", `{"fencingToken":1,"subject":"a/b","child":{"subject":"a/b","agentId":"a/b"}}`, map[string]string{"child.agentId": `"/"`}},
		{"PromotedFieldExact", `{"fencingToken":1,"subject":"a","Note":"x"}`, map[string]string{"Note": "not a known field"}},
		{"DashFieldIsUnknown", `{"fencingToken":1,"subject":"a","Ignored":"x"}`, map[string]string{"Ignored": "not a known field"}},
		{"MapValuesChecked", `{"fencingToken":1,"subject":"a","labels":{"a":1,"b":"x"}}`, map[string]string{"labels.b": "must be an integer"}},
		{"BodyNotAnObject", `[1]`, map[string]string{"(body)": "must be an object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, e := fieldsOfBind(t, c.body)
			if len(got) != len(c.want) {
				t.Fatalf("fields %v, want %v (%v)", got, c.want, e)
			}
			for f, frag := range c.want {
				if !strings.Contains(got[f], frag) {
					t.Fatalf("field %s: reason %q, want it to say %q (all: %v)", f, got[f], frag, got)
				}
			}
		})
	}
}

func TestStrictDecoderSyntax(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"subject":"a"`, `{"subject":"a"} {}`, `{"subject":"a"}]`, `{subject:"a"}`, `{"a":1,}`,
		strings.Repeat("[", strictjson.MaxDepth+2) + strings.Repeat("]", strictjson.MaxDepth+2),
	} {
		got, e := fieldsOfBind(t, body)
		if e == nil || len(got) != 0 || e.Detail == "" {
			t.Errorf("Bind(%.40s) = %v %v, want a 400 without fields", body, got, e)
		}
	}
}

func TestStrictDecoderDecodes(t *testing.T) {
	t.Parallel()
	var dst strictBody
	body := `{"fencingToken":7,"subject":"s","sequence":3,"dueAt":"2026-12-01T10:26:03.9+02:00","id":"6f1c3a1e-8c1e-4b7e-9d1a-2f7d1f5b2c3a",
		"version":9,"input":{"x":[1,{"y":null}]},"kinds":["a","b"],"child":{"subject":"c","agentId":"g"},
		"children":[{"subject":"d","agentId":"h"}],"labels":{"k":1},"note":"n"}`
	if err := Bind(ctxFor(http.MethodPost, "/", body, nil), &dst, false); err != nil {
		t.Fatal(err)
	}
	due := time.Date(2026, 12, 1, 8, 26, 3, 900e6, time.UTC)
	want := strictBody{
		embedded: embedded{Note: "n"}, FencingToken: ptr(int64(7)), Subject: "s", Sequence: ptr(int64(3)), DueAt: &due,
		ID: ptr(uuid.MustParse("6f1c3a1e-8c1e-4b7e-9d1a-2f7d1f5b2c3a")), Version: ptr(uint64(9)),
		Input: json.RawMessage(`{"x":[1,{"y":null}]}`), Kinds: []string{"a", "b"}, Child: &childBody{Subject: "c", AgentID: "g"},
		Children: []childBody{{Subject: "d", AgentID: "h"}}, Labels: map[string]int{"k": 1},
	}
	if !dst.DueAt.Equal(due) {
		t.Fatalf("dueAt %v, want %v", dst.DueAt, due)
	}
	dst.DueAt = &due
	if !reflect.DeepEqual(dst, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", dst, want)
	}
	// null clears a pointer and leaves the rest as encoding/json does.
	var n strictBody
	if err := Bind(ctxFor(http.MethodPost, "/", `{"fencingToken":1,"subject":"s","child":null,"dueAt":null,"input":null}`, nil), &n, false); err != nil {
		t.Fatal(err)
	}
	if n.Child != nil || n.DueAt != nil || string(n.Input) != "null" {
		t.Fatalf("nulls: %+v", n)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPath(t *testing.T) {
	t.Parallel()
	if got := Path("v1", "projects", "c d?x=1#y%"); got != "/v1/projects/c%20d%3Fx=1%23y%25" {
		t.Fatalf("Path = %q", got)
	}
}
