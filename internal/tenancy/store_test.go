package tenancy_test

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/ids"
	"github.com/ledger-dev/ledger/internal/tenancy"
	mssqlmig "github.com/ledger-dev/ledger/migrations/mssql"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		db := tgt.Open(t, dbtest.Options{})
		store := tenancy.NewStore(db)
		ctx := context.Background()

		// freshID is a tenant id nobody else uses, for cases that create the tenant themselves.
		freshID := func() string { return "c-" + ids.New().String()[:18] }

		t.Run("CreateKeyAuthenticatesAsItsTenantAndRole", func(t *testing.T) {
			t.Parallel()
			tenant := freshID()
			for _, role := range []string{tenancy.RoleAdmin, tenancy.RoleRuntime} {
				token, k, err := store.CreateKey(ctx, tenant, role)
				if err != nil {
					t.Fatal(err)
				}
				if k.TenantID != tenant || k.Role != role || len(k.KeyID) != 16 || k.CreatedAt.IsZero() || k.RevokedAt != nil {
					t.Fatalf("created key %+v", k)
				}
				if !strings.HasPrefix(token, "ldg_"+k.KeyID+"_") {
					t.Fatalf("token %q does not carry its key id %s", token, k.KeyID)
				}
				p, err := store.Authenticate(ctx, token)
				if err != nil {
					t.Fatal(err)
				}
				if p != (tenancy.Principal{TenantID: tenant, Role: role, KeyID: k.KeyID}) {
					t.Fatalf("principal %+v", p)
				}
			}
			// CreateKey made the tenant with the default budget.
			ten, err := store.Tenant(ctx, tenant)
			if err != nil || ten.MaxLeasedRuns != tenancy.DefaultMaxLeasedRuns {
				t.Fatalf("tenant made by CreateKey: %+v %v", ten, err)
			}
		})

		t.Run("TwoKeysAreDifferent", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			a, ka, err := store.CreateKey(ctx, tenant, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			b, kb, err := store.CreateKey(ctx, tenant, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			if a == b || ka.KeyID == kb.KeyID {
				t.Fatal("two keys share a secret or an id")
			}
		})

		t.Run("BadTokensAreUnauthorized", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			token, k, err := store.CreateKey(ctx, tenant, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			secret := strings.TrimPrefix(token, "ldg_"+k.KeyID+"_")
			flipped := []byte(secret)
			flipped[0] ^= 1
			cases := map[string]string{
				"WrongSecretRightKeyID": "ldg_" + k.KeyID + "_" + string(flipped),
				"TruncatedSecret":       token[:len(token)-1],
				"ExtraCharacter":        token + "A",
				"EmptySecret":           "ldg_" + k.KeyID + "_",
				"NoPrefix":              strings.TrimPrefix(token, "ldg_"),
				"OtherPrefix":           "xyz_" + strings.TrimPrefix(token, "ldg_"),
				"UpperCaseKeyID":        "ldg_" + strings.ToUpper(k.KeyID) + "_" + secret,
				"ShortKeyID":            "ldg_" + k.KeyID[:15] + "_" + secret,
				"UnknownKeyID":          "ldg_ffffffffffffffff_" + secret,
				"Empty":                 "",
				"PrefixOnly":            "ldg_",
			}
			for name, bad := range cases {
				if _, err := store.Authenticate(ctx, bad); !apperr.Is(err, api.CodeUnauthorized) {
					t.Errorf("%s: Authenticate(%q) = %v, want unauthorized", name, bad, err)
				}
			}
			if _, err := store.Authenticate(ctx, token); err != nil {
				t.Fatalf("the good key stopped working: %v", err)
			}
		})

		t.Run("RevokedKeyIsUnauthorized", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			token, k, err := store.CreateKey(ctx, tenant, tenancy.RoleRuntime)
			if err != nil {
				t.Fatal(err)
			}
			other, _, err := store.CreateKey(ctx, tenant, tenancy.RoleRuntime)
			if err != nil {
				t.Fatal(err)
			}
			if err := store.RevokeKey(ctx, k.KeyID); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Authenticate(ctx, token); !apperr.Is(err, api.CodeUnauthorized) {
				t.Fatalf("revoked key: %v, want unauthorized", err)
			}
			if _, err := store.Authenticate(ctx, other); err != nil {
				t.Fatalf("revoking one key revoked its sibling: %v", err)
			}
			keys, err := store.ListKeys(ctx, tenant)
			if err != nil {
				t.Fatal(err)
			}
			var revokedAt string
			for _, key := range keys {
				if key.KeyID == k.KeyID {
					if key.RevokedAt == nil {
						t.Fatal("ListKeys shows the revoked key as live")
					}
					revokedAt = key.RevokedAt.String()
				}
			}
			// Revoking again keeps the first revocation time and is not an error.
			if err := store.RevokeKey(ctx, k.KeyID); err != nil {
				t.Fatalf("second revoke: %v", err)
			}
			keys, _ = store.ListKeys(ctx, tenant)
			for _, key := range keys {
				if key.KeyID == k.KeyID && (key.RevokedAt == nil || key.RevokedAt.String() != revokedAt) {
					t.Fatalf("second revoke moved RevokedAt from %s to %v", revokedAt, key.RevokedAt)
				}
			}
			if err := store.RevokeKey(ctx, "0000000000000000"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("revoking an unknown key: %v, want not_found", err)
			}
		})

		t.Run("ListKeysFiltersByTenant", func(t *testing.T) {
			t.Parallel()
			a, b := freshID(), freshID()
			want := map[string]string{}
			for _, c := range []struct{ tenant, role string }{
				{a, tenancy.RoleAdmin}, {a, tenancy.RoleRuntime}, {b, tenancy.RoleAdmin},
			} {
				_, k, err := store.CreateKey(ctx, c.tenant, c.role)
				if err != nil {
					t.Fatal(err)
				}
				want[k.KeyID] = c.tenant
			}
			onlyA, err := store.ListKeys(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if len(onlyA) != 2 {
				t.Fatalf("ListKeys(a) = %d keys, want 2", len(onlyA))
			}
			for _, k := range onlyA {
				if k.TenantID != a || want[k.KeyID] != a {
					t.Fatalf("ListKeys(a) returned %+v", k)
				}
			}
			all, err := store.ListKeys(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, k := range all {
				if tenant, ok := want[k.KeyID]; ok {
					if tenant != k.TenantID {
						t.Fatalf("key %s listed under %s, made for %s", k.KeyID, k.TenantID, tenant)
					}
					found++
				}
			}
			if found != 3 {
				t.Fatalf("ListKeys(\"\") found %d of the 3 keys", found)
			}
			if none, err := store.ListKeys(ctx, freshID()); err != nil || len(none) != 0 {
				t.Fatalf("ListKeys of a tenant without keys: %v %v", none, err)
			}
		})

		t.Run("TenantIdsAreCaseSensitive", func(t *testing.T) {
			t.Parallel()
			lower := freshID()
			upper := strings.ToUpper(lower)
			if err := store.SetMaxLeased(ctx, lower, 3); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Tenant(ctx, upper); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("Tenant(%q) found %q: ids must compare case-sensitively (%v)", upper, lower, err)
			}
			token, _, err := store.CreateKey(ctx, upper, tenancy.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := store.Authenticate(ctx, token); err != nil || p.TenantID != upper {
				t.Fatalf("key of %q authenticates as %+v (%v)", upper, p, err)
			}
			if ten, err := store.Tenant(ctx, lower); err != nil || ten.MaxLeasedRuns != 3 {
				t.Fatalf("the upper-case tenant changed the lower-case one: %+v %v", ten, err)
			}
		})

		t.Run("SetMaxLeased", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			if ten, err := store.Tenant(ctx, tenant); err != nil || ten.MaxLeasedRuns != tenancy.DefaultMaxLeasedRuns || ten.TenantID != tenant {
				t.Fatalf("new tenant: %+v %v", ten, err)
			}
			for _, n := range []int{5, 0, 1_000_000} {
				if err := store.SetMaxLeased(ctx, tenant, n); err != nil {
					t.Fatal(err)
				}
				if ten, err := store.Tenant(ctx, tenant); err != nil || ten.MaxLeasedRuns != n {
					t.Fatalf("after SetMaxLeased(%d): %+v %v", n, ten, err)
				}
			}
			if err := store.SetMaxLeased(ctx, tenant, -1); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("negative budget: %v, want invalid_request", err)
			}
			if err := store.SetMaxLeased(ctx, "bad tenant", 1); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("bad tenant id: %v, want invalid_request", err)
			}
			// Setting a budget creates the tenant.
			fresh := freshID()
			if err := store.SetMaxLeased(ctx, fresh, 7); err != nil {
				t.Fatal(err)
			}
			if ten, err := store.Tenant(ctx, fresh); err != nil || ten.MaxLeasedRuns != 7 {
				t.Fatalf("tenant made by SetMaxLeased: %+v %v", ten, err)
			}
		})

		t.Run("MissingTenantIsNotFound", func(t *testing.T) {
			t.Parallel()
			if _, err := store.Tenant(ctx, freshID()); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("got %v, want not_found", err)
			}
		})

		t.Run("EnsureTenantIsIdempotent", func(t *testing.T) {
			t.Parallel()
			tenant := freshID()
			for range 2 {
				if err := store.EnsureTenant(ctx, tenant); err != nil {
					t.Fatal(err)
				}
			}
			if err := store.SetMaxLeased(ctx, tenant, 2); err != nil {
				t.Fatal(err)
			}
			if err := store.EnsureTenant(ctx, tenant); err != nil {
				t.Fatal(err)
			}
			if ten, _ := store.Tenant(ctx, tenant); ten.MaxLeasedRuns != 2 {
				t.Fatalf("EnsureTenant reset the budget to %d", ten.MaxLeasedRuns)
			}
			has, err := store.HasTenants(ctx)
			if err != nil || !has {
				t.Fatalf("HasTenants = %v, %v", has, err)
			}
		})

		t.Run("CreateKeyRefusesBadInput", func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct{ tenant, role string }{
				{freshID(), "owner"}, {freshID(), ""}, {freshID(), "Admin"}, {"", tenancy.RoleAdmin}, {"has space", tenancy.RoleAdmin},
			} {
				if _, _, err := store.CreateKey(ctx, c.tenant, c.role); !apperr.Is(err, api.CodeInvalidRequest) {
					t.Errorf("CreateKey(%q, %q) = %v, want invalid_request", c.tenant, c.role, err)
				}
				if c.tenant != "" && tenancy.ValidTenantID(c.tenant) {
					if _, err := store.Tenant(ctx, c.tenant); !apperr.Is(err, api.CodeNotFound) {
						t.Errorf("a refused CreateKey made tenant %q", c.tenant)
					}
				}
			}
		})
	})
}

func TestHasTenantsOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite().Open(t, dbtest.Options{})
	store := tenancy.NewStore(db)
	if has, err := store.HasTenants(context.Background()); err != nil || has {
		t.Fatalf("fresh database: HasTenants = %v, %v", has, err)
	}
	if err := store.EnsureTenant(context.Background(), "first"); err != nil {
		t.Fatal(err)
	}
	if has, err := store.HasTenants(context.Background()); err != nil || !has {
		t.Fatalf("after one tenant: HasTenants = %v, %v", has, err)
	}
}

func TestValidTenantID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id   string
		want bool
	}{
		{"default", true},
		{"a", true},
		{"Acme-Prod_2.eu", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"has space", false},
		{"slash/inside", false},
		{"colon:inside", false},
		{"tab\tinside", false},
		{"naïve", false},
		{"semi;colon", false},
		{"quote'", false},
	}
	for _, c := range cases {
		if got := tenancy.ValidTenantID(c.id); got != c.want {
			t.Errorf("ValidTenantID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

// A label is measured in UTF-16 code units, as SQL Server's nvarchar(100) counts it: 60
// keys (U+1F511, outside the basic plane) are 60 characters and 120 units, and would pass
// a count of characters and then overflow the column (Msg 2628, a 500) where SQLite
// stores them. It is refused before the database sees it.
func TestLabelLengthCountsUTF16Units(t *testing.T) {
	t.Parallel()
	store := tenancy.NewStore(dbtest.SQLite().Open(t, dbtest.Options{}))
	ctx := context.Background()
	cases := []struct {
		label string
		ok    bool
	}{
		{strings.Repeat("\U0001F511", 60), false},
		{strings.Repeat("\U0001F511", 51), false},
		{strings.Repeat("\U0001F511", 50), true},
		{strings.Repeat("é", 100), true},
		{strings.Repeat("x", 101), false},
	}
	for i, c := range cases {
		_, k, err := store.CreateLabeledKey(ctx, "label-"+string(rune('a'+i)), tenancy.RoleAdmin, c.label)
		if c.ok {
			if err != nil || string(k.Label) != c.label {
				t.Errorf("label of %d runes: key %+v, err %v; want it stored", len([]rune(c.label)), k, err)
			}
			continue
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest || ae.Code.Status() != 400 {
			t.Errorf("label of %d runes (%d UTF-16 units): err %v; want 400 invalid_request", len([]rune(c.label)), len(utf16.Encode([]rune(c.label))), err)
		}
	}
}

// MaxLabelLen is the declared width of ApiKeys.Label on SQL Server (SQLite's TEXT has
// none): the validation and the column cannot drift apart.
func TestMaxLabelLenIsTheColumnWidth(t *testing.T) {
	t.Parallel()
	b, err := fs.ReadFile(mssqlmig.FS, "000017_api_key_label.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\[Label\] nvarchar\((\d+)\)`).FindStringSubmatch(string(b))
	if m == nil || m[1] != strconv.Itoa(tenancy.MaxLabelLen) {
		t.Fatalf("ApiKeys.Label is declared %v on SQL Server; MaxLabelLen is %d", m, tenancy.MaxLabelLen)
	}
}
