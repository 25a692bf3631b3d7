package tenancy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/tenancy"
)

func TestRequire(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	store := tenancy.NewStore(db)
	ctx := context.Background()
	tenant := dbtest.NewTenant(t, db)
	admin, adminKey, err := store.CreateKey(ctx, tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	runtime, _, err := store.CreateKey(ctx, tenant, tenancy.RoleRuntime)
	if err != nil {
		t.Fatal(err)
	}
	revoked, revokedKey, err := store.CreateKey(ctx, tenant, tenancy.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.RevokeKey(ctx, revokedKey.KeyID); err != nil {
		t.Fatal(err)
	}
	auth := tenancy.NewAuthenticator(store)
	e := echo.New()

	cases := []struct {
		name   string
		header string
		roles  []string
		want   api.ProblemCode // "" means admitted
	}{
		{"AdminOnAdminRoute", "Bearer " + admin, []string{tenancy.RoleAdmin}, ""},
		{"RuntimeOnAdminRoute", "Bearer " + runtime, []string{tenancy.RoleAdmin}, api.CodeForbidden},
		{"AdminOnRuntimeRoute", "Bearer " + admin, []string{tenancy.RoleRuntime}, api.CodeForbidden},
		{"RuntimeOnEitherRoute", "Bearer " + runtime, []string{tenancy.RoleAdmin, tenancy.RoleRuntime}, ""},
		{"AnyRoleRoute", "Bearer " + runtime, nil, ""},
		{"LowerCaseScheme", "bearer " + admin, []string{tenancy.RoleAdmin}, ""},
		{"NoHeader", "", nil, api.CodeUnauthorized},
		{"NoHeaderOnAdminRoute", "", []string{tenancy.RoleAdmin}, api.CodeUnauthorized},
		{"BasicScheme", "Basic " + admin, nil, api.CodeUnauthorized},
		{"SchemeOnly", "Bearer", nil, api.CodeUnauthorized},
		{"EmptyToken", "Bearer ", nil, api.CodeUnauthorized},
		{"TokenWithoutScheme", admin, nil, api.CodeUnauthorized},
		{"UnknownKey", "Bearer ldg_ffffffffffffffff_nope", []string{tenancy.RoleAdmin}, api.CodeUnauthorized},
		// A bad key on a route the role could not use anyway is still 401, never 403: the
		// answer must not depend on what the bad key might have been.
		{"RevokedAdminOnRuntimeRoute", "Bearer " + revoked, []string{tenancy.RoleRuntime}, api.CodeUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			rec := httptest.NewRecorder()
			ec := e.NewContext(req, rec)
			var seen *tenancy.Principal
			next := func(c echo.Context) error {
				p := tenancy.MustPrincipal(c)
				seen = &p
				return c.NoContent(http.StatusNoContent)
			}
			err := auth.Require(c.roles...)(next)(ec)
			challenge := rec.Header().Get("WWW-Authenticate")
			if c.want == "" {
				if err != nil || seen == nil {
					t.Fatalf("refused: %v", err)
				}
				if seen.TenantID != tenant || seen.KeyID == "" {
					t.Fatalf("principal %+v", *seen)
				}
				if c.header == "Bearer "+admin && seen.KeyID != adminKey.KeyID {
					t.Fatalf("principal names key %s, want %s", seen.KeyID, adminKey.KeyID)
				}
				return
			}
			if !apperr.Is(err, c.want) {
				t.Fatalf("got %v, want %s", err, c.want)
			}
			if seen != nil {
				t.Fatal("the handler ran for a refused request")
			}
			switch c.want {
			case api.CodeUnauthorized:
				if challenge != `Bearer realm="ledger"` {
					t.Fatalf("401 challenge %q", challenge)
				}
			case api.CodeForbidden:
				if challenge != "" {
					t.Fatalf("403 carries a challenge %q", challenge)
				}
			}
		})
	}
}

func TestFromWithoutPrincipal(t *testing.T) {
	t.Parallel()
	if _, ok := tenancy.From(context.Background()); ok {
		t.Fatal("a bare context has a principal")
	}
	p := tenancy.Principal{TenantID: "t", Role: tenancy.RoleAdmin, KeyID: "k"}
	if got, ok := tenancy.From(tenancy.WithPrincipal(context.Background(), p)); !ok || got != p {
		t.Fatalf("From(WithPrincipal(p)) = %+v, %v", got, ok)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustPrincipal without a principal did not panic")
		}
	}()
	e := echo.New()
	tenancy.MustPrincipal(e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder()))
}
