package app_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/app"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

// projectBody is the wire form of a project.
type projectBody struct {
	ProjectID     string  `json:"projectId"`
	Active        bool    `json:"active"`
	RetentionDays int     `json:"retentionDays"`
	LeasedCount   *int    `json:"leasedCount"`
	TenantID      *string `json:"tenantId"`
	CreatedAt     string  `json:"createdAt"`
	UpdatedAt     string  `json:"updatedAt"`
}

type projectPage struct {
	Items      []projectBody `json:"items"`
	NextCursor *string       `json:"nextCursor"`
}

var etagPattern = regexp.MustCompile(`^"[0-9a-f]{16}"$`)

// TestHTTP runs the project, authentication, validation and public routes end to end over one
// server, then checks that every status the server answered is in its OpenAPI document.
func TestHTTP(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{MaxBody: 1024})

	t.Run("cases", func(t *testing.T) {
		t.Run("ProjectCreateUpdateWithETags", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)

			r := s.do(t, req{method: http.MethodPut, path: "/v1/projects/alpha", key: admin, body: `{"retentionDays": 30}`})
			wantStatus(t, r, http.StatusCreated)
			etag1 := r.header.Get("ETag")
			if !etagPattern.MatchString(etag1) {
				t.Fatalf("create ETag %q is not a strong 16-hex-digit tag", etag1)
			}
			if loc := r.header.Get("Location"); loc != "/v1/projects/alpha" {
				t.Fatalf("Location %q, want /v1/projects/alpha", loc)
			}
			p := decode[projectBody](t, r)
			if p.ProjectID != "alpha" || !p.Active || p.RetentionDays != 30 || p.CreatedAt == "" || p.UpdatedAt == "" || p.LeasedCount == nil {
				t.Fatalf("created project %+v", p)
			}
			if p.TenantID != nil {
				t.Fatalf("the project body carries the tenant: %s", r.body)
			}

			r = s.do(t, req{method: http.MethodGet, path: "/v1/projects/alpha", key: admin})
			wantStatus(t, r, http.StatusOK)
			if got := r.header.Get("ETag"); got != etag1 {
				t.Fatalf("GET ETag %q, want the create's %q", got, etag1)
			}

			r = s.do(t, req{method: http.MethodPut, path: "/v1/projects/alpha", key: admin, body: `{"active": false}`})
			wantProblem(t, r, http.StatusPreconditionRequired, "precondition_required")

			v1, ok := sqldb.ParseETag(etag1)
			if !ok {
				t.Fatalf("ETag %q does not parse", etag1)
			}
			for _, stale := range []string{(v1 - 1).ETag(), (v1 + 1000).ETag(), `W/` + etag1, `"nonsense"`, (v1 + 1).ETag() + ", W/" + etag1} {
				r = s.do(t, req{method: http.MethodPut, path: "/v1/projects/alpha", key: admin, body: `{"active": false}`, header: map[string]string{"If-Match": stale}})
				wantProblem(t, r, http.StatusPreconditionFailed, "precondition_failed")
			}

			r = s.do(t, req{method: http.MethodPut, path: "/v1/projects/alpha", key: admin, body: `{"active": false}`, header: map[string]string{"If-Match": etag1}})
			wantStatus(t, r, http.StatusOK)
			etag2 := r.header.Get("ETag")
			if !etagPattern.MatchString(etag2) || etag2 == etag1 {
				t.Fatalf("update ETag %q, want a new strong tag (was %q)", etag2, etag1)
			}
			if r.header.Get("Location") != "" {
				t.Fatalf("an update answered Location %q", r.header.Get("Location"))
			}
			p = decode[projectBody](t, r)
			if p.Active || p.RetentionDays != 30 {
				t.Fatalf("update: %+v, want inactive and retention kept at 30", p)
			}

			// The first ETag is stale now.
			r = s.do(t, req{method: http.MethodPut, path: "/v1/projects/alpha", key: admin, body: `{"active": true}`, header: map[string]string{"If-Match": etag1}})
			wantProblem(t, r, http.StatusPreconditionFailed, "precondition_failed")

			r = s.do(t, req{method: http.MethodGet, path: "/v1/projects/alpha", key: admin})
			wantStatus(t, r, http.StatusOK)
			if got := r.header.Get("ETag"); got != etag2 {
				t.Fatalf("GET after update: ETag %q, want %q", got, etag2)
			}
			if p := decode[projectBody](t, r); p.Active {
				t.Fatalf("refused update was applied: %+v", p)
			}
		})

		t.Run("RuntimeKeyCannotManageProjects", func(t *testing.T) {
			t.Parallel()
			_, admin, runtime := s.tenantKeys(t)
			r := s.do(t, req{method: http.MethodPut, path: "/v1/projects/x", key: runtime, body: `{}`})
			wantProblem(t, r, http.StatusForbidden, "forbidden")
			if r.header.Get("WWW-Authenticate") != "" {
				t.Fatalf("403 carries WWW-Authenticate")
			}
			wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects/x", key: admin}), http.StatusNotFound, "not_found")
			// Runtimes read their tenant.
			wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects", key: runtime}), http.StatusOK)
		})

		t.Run("OtherTenantSeesAndChangesNothing", func(t *testing.T) {
			t.Parallel()
			_, adminA, _ := s.tenantKeys(t)
			_, adminB, runtimeB := s.tenantKeys(t)
			r := s.do(t, req{method: http.MethodPut, path: "/v1/projects/shared", key: adminA, body: `{"retentionDays": 10}`})
			wantStatus(t, r, http.StatusCreated)
			etag := r.header.Get("ETag")

			for _, key := range []string{adminB, runtimeB} {
				other := wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects/shared", key: key}), http.StatusNotFound, "not_found")
				missing := wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects/absent", key: key}), http.StatusNotFound, "not_found")
				if strings.ReplaceAll(other.Detail, "shared", "ID") != strings.ReplaceAll(missing.Detail, "absent", "ID") {
					t.Fatalf("another tenant's project answers %q, a missing one %q", other.Detail, missing.Detail)
				}
			}
			r = s.do(t, req{method: http.MethodPut, path: "/v1/projects/shared", key: adminB, body: `{"active": false, "retentionDays": 1}`, header: map[string]string{"If-Match": etag}})
			wantProblem(t, r, http.StatusPreconditionFailed, "precondition_failed")
			if pg := decode[projectPage](t, s.do(t, req{method: http.MethodGet, path: "/v1/projects", key: adminB})); len(pg.Items) != 0 {
				t.Fatalf("tenant B lists %+v", pg.Items)
			}

			r = s.do(t, req{method: http.MethodGet, path: "/v1/projects/shared", key: adminA})
			wantStatus(t, r, http.StatusOK)
			if p := decode[projectBody](t, r); r.header.Get("ETag") != etag || !p.Active || p.RetentionDays != 10 {
				t.Fatalf("tenant A's project changed: %+v ETag %s (was %s)", p, r.header.Get("ETag"), etag)
			}
			// B's create of the same id is B's own project, not A's.
			wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/shared", key: adminB, body: `{"active": false}`}), http.StatusCreated)
			if p := decode[projectBody](t, s.do(t, req{method: http.MethodGet, path: "/v1/projects/shared", key: adminA})); !p.Active {
				t.Fatalf("tenant B's create changed tenant A's project")
			}
		})

		t.Run("BadCredentialsAre401WithChallenge", func(t *testing.T) {
			t.Parallel()
			tenant, admin, _ := s.tenantKeys(t)
			revoked, k, err := s.keys.CreateKey(context.Background(), tenant, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			// Never used before it is revoked: the authenticator caches good keys for a few
			// seconds, so a key used just before revocation may work that long on a replica.
			if err := s.keys.RevokeKey(context.Background(), k.KeyID); err != nil {
				t.Fatal(err)
			}
			keyID := strings.Split(admin, "_")[1]
			cases := []struct{ name, auth string }{
				{"NoHeader", ""},
				{"EmptyBearer", "Bearer "},
				{"BasicScheme", "Basic " + base64.StdEncoding.EncodeToString([]byte("a:b"))},
				{"NotAKey", "Bearer hello"},
				{"UnknownKeyID", "Bearer ldg_0123456789abcdef_" + strings.Repeat("A", 43)},
				{"RightKeyIDWrongSecret", "Bearer ldg_" + keyID + "_" + strings.Repeat("A", 43)},
				{"KeyWithoutScheme", admin},
				{"Revoked", "Bearer " + revoked},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					for _, rq := range []req{
						{method: http.MethodGet, path: "/v1/projects"},
						{method: http.MethodPut, path: "/v1/projects/p", body: `{}`},
					} {
						if c.auth != "" {
							rq.header = map[string]string{"Authorization": c.auth}
						}
						r := s.do(t, rq)
						p := wantProblem(t, r, http.StatusUnauthorized, "unauthorized")
						if ch := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer") {
							t.Fatalf("%s %s: WWW-Authenticate %q, want a Bearer challenge", rq.method, rq.path, ch)
						}
						if strings.Contains(p.Detail, keyID) {
							t.Fatalf("401 detail names the key: %q", p.Detail)
						}
					}
				})
			}
			// The good key still works, and the bad attempts created nothing.
			wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects/p", key: admin}), http.StatusNotFound, "not_found")
		})

		t.Run("RevocationTakesEffectOnAFreshReplica", func(t *testing.T) {
			t.Parallel()
			tenant := "revoke-" + fmt.Sprint(rand.Int64())
			key, k, err := s.keys.CreateKey(context.Background(), tenant, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects", key: key}), http.StatusOK)
			if err := s.keys.RevokeKey(context.Background(), k.KeyID); err != nil {
				t.Fatal(err)
			}
			// The server above may still admit the key from its cache for up to 5 s (the
			// documented bound); a replica that has not cached it refuses it at once.
			replica := s.replica(t)
			wantProblem(t, replica.do(t, req{method: http.MethodGet, path: "/v1/projects", key: key}), http.StatusUnauthorized, "unauthorized")
		})

		t.Run("MalformedBodiesAre400", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)
			cases := []struct {
				name, body, field string
			}{
				{"UnknownField", `{"bogus": 1}`, "bogus"},
				{"UnknownFieldBesideKnown", `{"active": true, "Active2": false}`, "Active2"},
				{"MalformedJSON", `{"active": tru}`, ""},
				{"TruncatedJSON", `{"active": true`, ""},
				{"WrongTypeBool", `{"active": "yes"}`, "active"},
				{"WrongTypeInt", `{"retentionDays": "7"}`, "retentionDays"},
				{"FractionForInt", `{"retentionDays": 1.5}`, "retentionDays"},
				{"RetentionBelowMin", `{"retentionDays": 0}`, "retentionDays"},
				{"RetentionAboveMax", `{"retentionDays": 36501}`, "retentionDays"},
				{"TwoValues", `{} {}`, ""},
				{"ArrayBody", `[]`, ""},
				{"StringBody", `"x"`, ""},
			}
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					path := fmt.Sprintf("/v1/projects/bad-%d", i)
					p := wantProblem(t, s.do(t, req{method: http.MethodPut, path: path, key: admin, body: c.body}), http.StatusBadRequest, "invalid_request")
					if c.field != "" {
						if len(p.Errors) == 0 || p.Errors[0].Field != c.field || p.Errors[0].Reason == "" {
							t.Fatalf("errors %+v, want field %q with a reason", p.Errors, c.field)
						}
					}
					wantProblem(t, s.do(t, req{method: http.MethodGet, path: path, key: admin}), http.StatusNotFound, "not_found")
				})
			}
		})

		t.Run("BodyOverMaxIs413", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)
			big := `{"active": true, "pad": "` + strings.Repeat("x", 2048) + `"}`
			for _, chunked := range []bool{false, true} {
				path := fmt.Sprintf("/v1/projects/big-%v", chunked)
				r := s.do(t, req{method: http.MethodPut, path: path, key: admin, body: big, chunked: chunked})
				wantProblem(t, r, http.StatusRequestEntityTooLarge, "body_too_large")
				wantProblem(t, s.do(t, req{method: http.MethodGet, path: path, key: admin}), http.StatusNotFound, "not_found")
			}
			// A declared length over the limit is refused before the body arrives: the client
			// sends only the headers and still gets its answer.
			conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(conn, "PUT /v1/projects/declared HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", admin)
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a request whose body never came: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("declared oversize body: status %d, want 413", res.StatusCode)
			}
			// A body just under the limit is read.
			under := `{"retentionDays": 5}` + strings.Repeat(" ", 1024-len(`{"retentionDays": 5}`))
			for _, chunked := range []bool{false, true} {
				path := fmt.Sprintf("/v1/projects/under-%v", chunked)
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: path, key: admin, body: under, chunked: chunked}), http.StatusCreated)
			}
		})

		t.Run("MalformedPathIDIs400", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)
			for _, id := range []string{strings.Repeat("a", 65), "tab%09id", "nul%00", "%FF%FE"} {
				for _, m := range []string{http.MethodGet, http.MethodPut} {
					r := s.do(t, req{method: m, path: "/v1/projects/" + id, key: admin, body: `{}`})
					p := wantProblem(t, r, http.StatusBadRequest, "invalid_request")
					if len(p.Errors) != 1 || p.Errors[0].Field != "projectId" {
						t.Fatalf("%s %q: errors %+v, want projectId", m, id, p.Errors)
					}
				}
			}
			// 64 characters is the longest id, and non-ASCII ids count characters, not bytes.
			for _, id := range []string{strings.Repeat("b", 64), strings.Repeat("é", 64)} {
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/" + url.PathEscape(id), key: admin, body: `{}`}), http.StatusCreated)
				r := s.do(t, req{method: http.MethodGet, path: "/v1/projects/" + url.PathEscape(id), key: admin})
				wantStatus(t, r, http.StatusOK)
				if p := decode[projectBody](t, r); p.ProjectID != id {
					t.Fatalf("project id %q read back as %q", id, p.ProjectID)
				}
			}
		})

		t.Run("ListQueryValidation", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)
			notJSON := base64.RawURLEncoding.EncodeToString([]byte("not json"))
			unknown := base64.RawURLEncoding.EncodeToString([]byte(`{"zz": 1}`))
			cases := []struct{ query, field string }{
				{"limit=0", "limit"},
				{"limit=-1", "limit"},
				{"limit=501", "limit"},
				{"limit=abc", "limit"},
				{"limit=1.5", "limit"},
				{"cursor=%21%21%21", "cursor"},
				{"cursor=" + notJSON, "cursor"},
				{"cursor=" + unknown, "cursor"},
			}
			for _, c := range cases {
				r := s.do(t, req{method: http.MethodGet, path: "/v1/projects?" + c.query, key: admin})
				p := wantProblem(t, r, http.StatusBadRequest, "invalid_request")
				if len(p.Errors) != 1 || p.Errors[0].Field != c.field {
					t.Fatalf("%s: errors %+v, want field %s", c.query, p.Errors, c.field)
				}
			}
			for _, q := range []string{"limit=1", "limit=500", ""} {
				wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/v1/projects?" + q, key: admin}), http.StatusOK)
			}
		})

		t.Run("PaginationVisitsEveryProjectOnce", func(t *testing.T) {
			t.Parallel()
			_, admin, _ := s.tenantKeys(t)
			_, otherAdmin, _ := s.tenantKeys(t)
			wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/m-other", key: otherAdmin}), http.StatusCreated)
			var want []string
			for i := range 11 {
				want = append(want, fmt.Sprintf("p%02d", i))
			}
			order := slices.Clone(want)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, id := range order {
				wantStatus(t, s.do(t, req{method: http.MethodPut, path: "/v1/projects/" + id, key: admin}), http.StatusCreated)
			}
			for _, limit := range []int{1, 3, 4, 11, 12, 500} {
				var got []string
				cursor, pages := "", 0
				for {
					path := fmt.Sprintf("/v1/projects?limit=%d", limit)
					if cursor != "" {
						path += "&cursor=" + cursor
					}
					r := s.do(t, req{method: http.MethodGet, path: path, key: admin})
					wantStatus(t, r, http.StatusOK)
					pg := decode[projectPage](t, r)
					if pg.Items == nil {
						t.Fatalf("items is not an array: %s", r.body)
					}
					if len(pg.Items) > limit {
						t.Fatalf("limit %d: page of %d", limit, len(pg.Items))
					}
					for _, p := range pg.Items {
						got = append(got, p.ProjectID)
					}
					pages++
					if pages > 20 {
						t.Fatalf("limit %d: pagination does not end", limit)
					}
					if pg.NextCursor == nil || *pg.NextCursor == "" {
						break
					}
					cursor = *pg.NextCursor
					if url.QueryEscape(cursor) != cursor {
						t.Fatalf("cursor %q is not URL-safe", cursor)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: walked %v, want %v", limit, got, want)
				}
				if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
					t.Fatalf("limit %d: %d pages, want %d (no empty last page)", limit, pages, wantPages)
				}
			}
		})

		t.Run("PublicRoutesNeedNoKey", func(t *testing.T) {
			t.Parallel()
			r := s.do(t, req{method: http.MethodGet, path: "/healthz"})
			wantStatus(t, r, http.StatusOK)
			if h := decode[map[string]any](t, r); h["status"] != "ok" {
				t.Fatalf("healthz: %s", r.body)
			}
			r = s.do(t, req{method: http.MethodGet, path: "/readyz"})
			wantStatus(t, r, http.StatusOK)
			if h := decode[map[string]any](t, r); h["status"] != "ok" {
				t.Fatalf("readyz: %s", r.body)
			}
			r = s.do(t, req{method: http.MethodGet, path: "/metrics"})
			wantStatus(t, r, http.StatusOK)
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
				t.Fatalf("metrics Content-Type %q", r.header.Get("Content-Type"))
			}
			if !strings.Contains(string(r.body), `ledger_http_requests_total{method="GET",route="/healthz",status="200"}`) {
				t.Fatalf("metrics do not count the healthz request:\n%s", r.body)
			}
			r = s.do(t, req{method: http.MethodGet, path: "/openapi.json"})
			wantStatus(t, r, http.StatusOK)
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Fatalf("openapi Content-Type %q", r.header.Get("Content-Type"))
			}
			doc := decode[openAPIDoc](t, r)
			if doc.OpenAPI != "3.1.0" || doc.Paths["/v1/projects/{projectId}"] == nil {
				t.Fatalf("openapi.json: version %q, paths %v", doc.OpenAPI, keys(doc.Paths))
			}
		})

		t.Run("UnknownRouteIsProblem404", func(t *testing.T) {
			t.Parallel()
			wantProblem(t, s.do(t, req{method: http.MethodGet, path: "/v1/no-such-thing"}), http.StatusNotFound, "not_found")
		})
	})

	checkStatusesDocumented(t, s)
}

// TestReadyzFailsWhenTheDatabaseIsGone checks /readyz answers 503 once the database is
// unreachable, while /healthz (the process) stays 200.
func TestReadyzFailsWhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	s := newStack(t, app.Config{})
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/readyz"}), http.StatusOK)
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	r := s.do(t, req{method: http.MethodGet, path: "/readyz"})
	wantProblem(t, r, http.StatusServiceUnavailable, "database_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After")
	}
	wantStatus(t, s.do(t, req{method: http.MethodGet, path: "/healthz"}), http.StatusOK)
}
