package tenancy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestRevokedKeyWorksAtMostTheCacheTTL pins the documented bound: a replica that admitted a
// key keeps admitting it for cacheTTL after revocation, and not longer. (dbtest imports this
// package, so this internal test opens its database itself.)
func TestRevokedKeyWorksAtMostTheCacheTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: filepath.Join(t.TempDir(), "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mg, err := db.NewMigrator()
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	mg.Close()
	store := NewStore(db)
	token, k, err := store.CreateKey(ctx, "cache", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAuthenticator(store)
	a.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	e := echo.New()
	call := func() error {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return a.Require(RoleAdmin)(func(c echo.Context) error { return nil })(e.NewContext(req, httptest.NewRecorder()))
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if err := store.RevokeKey(ctx, k.KeyID); err != nil {
		t.Fatal(err)
	}
	advance(cacheTTL - time.Millisecond)
	if err := call(); err != nil {
		t.Fatalf("within the cache TTL the cached key was refused: %v", err)
	}
	advance(2 * time.Millisecond)
	if err := call(); !apperr.Is(err, apperr.Unauthorized) {
		t.Fatalf("past the cache TTL the revoked key got %v, want unauthorized", err)
	}
	if cacheTTL > 10*time.Second {
		t.Fatalf("cacheTTL %s: README and the authenticator promise a few seconds", cacheTTL)
	}
}
