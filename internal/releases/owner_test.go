package releases_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/releases"
	"github.com/ledger-dev/ledger/internal/sqldb"
	"github.com/ledger-dev/ledger/internal/sqldb/migrate"
)

// TestReleaseIDsAreOwned: a release id belongs to the tenant that registered its first
// version; another tenant can register no version under it.
func TestReleaseIDsAreOwned(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		w := newWorld(t, tgt)

		t.Run("AnotherTenantCannotAddAVersion", func(t *testing.T) {
			t.Parallel()
			a, b := w.tenant(t), w.tenant(t)
			id := rid(a, "owned")
			w.create(t, a, id, "v1", api.ReleaseActive, nil)
			// b may not add v2 (today's bug: it could, and so block a's own v2), nor v1.
			for _, av := range []string{"v2", "v1"} {
				_, _, err := w.put(t, b, id, av, body(t, refsA, api.ReleaseActive))
				wantConflict(t, err, a, id)
			}
			// a adds v2 as usual, and b still has nothing.
			w.create(t, a, id, "v2", api.ReleaseVerified, nil)
			if list, err := w.store.List(w.ctx, b, releases.ListFilter{Limit: 10}); err != nil || len(list) != 0 {
				t.Fatalf("b's releases: %+v %v", list, err)
			}
			// The owner is whoever registered first, not whichever id sorts first.
			first := rid(b, "first")
			w.create(t, b, first, "1", api.ReleaseVerified, nil)
			_, _, err := w.put(t, a, first, "2", body(t, refsA, api.ReleaseVerified))
			wantConflict(t, err, b, first)
		})

		t.Run("RefusedCreateWritesNothing", func(t *testing.T) {
			t.Parallel()
			a, b := w.tenant(t), w.tenant(t)
			id := rid(a, "nothing")
			w.create(t, a, id, "1", api.ReleaseActive, nil)
			_, _, err := w.put(t, b, id, "2", body(t, refsA, api.ReleaseActive))
			wantConflict(t, err, a, id)
			if _, err := w.store.Get(w.ctx, a, id, "2"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("a refused create of b wrote a row: %v", err)
			}
		})
	})
}

// wantConflict checks err is release_conflict with a detail that names nothing of the
// owner's rows.
func wantConflict(t *testing.T, err error, owner, id string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Code != api.CodeReleaseConflict {
		t.Fatalf("got %v, want release_conflict", err)
	}
	for _, leak := range []string{owner, id, "active", "verified", "v1"} {
		if strings.Contains(e.Detail, leak) {
			t.Fatalf("release_conflict detail %q leaks %q", e.Detail, leak)
		}
	}
}

// TestReleaseCreateRaces makes the paths a concurrent create takes on SQL Server run on
// SQLite (one writer, so it never races by itself): a statement hook writes what the
// winning create would have committed just before the statement of the loser that meets
// it. Each case has a database of its own (the hook is the database's).
func TestReleaseCreateRaces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// before is the statement the winner's rows are written ahead of.
		before string
		// sameTenant: the winner is the loser's own tenant (else another tenant).
		sameTenant bool
		// ownerRow: the winner claimed the id; winnerRow: it registered the pair too.
		ownerRow, winnerRow bool
		// refs is what the loser sends (the winner sends refsA).
		refs    string
		created bool
		code    api.ProblemCode
	}{
		{"TwoTenantsRaceForANewID", "INSERT INTO ReleaseOwners", false, true, false, refsA, false, api.CodeReleaseConflict},
		{"TwoTenantsRaceBeforeTheOwnerRead", "FROM ReleaseOwners", false, true, true, refsA, false, api.CodeReleaseConflict},
		{"SameTenantClaimsTheIDFirst", "INSERT INTO ReleaseOwners", true, true, false, refsA, true, ""},
		{"SameTenantCreatesTheSamePairFirst", "FROM ReleaseOwners", true, true, true, refsA, false, ""},
		{"SameTenantCreatesThePairWithOtherContentFirst", "FROM ReleaseOwners", true, true, true, `["other"]`, false, api.CodeReleaseImmutable},
		{"SameTenantPairLandsBeforeTheInsert", "INSERT INTO LoadedReleases", true, false, true, refsA, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, dbtest.SQLite())
			loser, other := w.tenant(t), w.tenant(t)
			winner := other
			if c.sameTenant {
				winner = loser
			}
			id := rid(loser, "raced")
			win := body(t, refsA, api.ReleaseActive)
			canonical, err := releases.Canonicalize(win.ContentRefs)
			if err != nil {
				t.Fatal(err)
			}
			var fired atomic.Bool
			w.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if !strings.Contains(st.Query, c.before) || fired.Swap(true) {
					return nil
				}
				now, err := tx.Now(ctx)
				if err != nil {
					return err
				}
				if c.ownerRow {
					if _, err := tx.ExecContext(ctx, `INSERT INTO ReleaseOwners (ReleaseId, TenantId, CreatedAt) VALUES (?1, ?2, ?3)`,
						id, winner, tx.Dialect.Time(now)); err != nil {
						return err
					}
				}
				if !c.winnerRow {
					return nil
				}
				_, err = tx.ExecContext(ctx, `INSERT INTO LoadedReleases (ReleaseId, AdapterVersion, TenantId, ManifestHash,
    ContentRefsJson, State, VerifiedAt, InFlightPolicy, Version)
VALUES (?1, '1', ?2, ?3, ?4, 1, ?5, NULL, (SELECT Value + 1 FROM RowVersionCounter))`,
					id, winner, win.ManifestHash, string(canonical), tx.Dialect.Time(now))
				return err
			})
			got, created, err := w.put(t, loser, id, "1", body(t, c.refs, api.ReleaseActive))
			w.db.SetStatementHook(nil)
			if !fired.Load() {
				t.Fatalf("the hook never met %q", c.before)
			}
			if c.code != "" {
				if !apperr.Is(err, c.code) {
					t.Fatalf("got %v, want %s", err, c.code)
				}
				if c.code == api.CodeReleaseConflict {
					wantConflict(t, err, other, id)
				}
			} else if err != nil || created != c.created || got.ReleaseID != id || got.ManifestHash != win.ManifestHash {
				t.Fatalf("got %+v created=%v err=%v, want the pair (created=%v)", got, created, err, c.created)
			}
			// The winner's rows were written in the loser's transaction (the hook's), so a
			// refusal rolls them back with it: what is left is the loser's, and only when it
			// succeeded.
			r, gerr := w.store.Get(w.ctx, loser, id, "1")
			switch {
			case c.code != "" && !apperr.Is(gerr, api.CodeNotFound):
				t.Fatalf("a refused create left %+v %v", r, gerr)
			case c.code == "" && (gerr != nil || r.ManifestHash != win.ManifestHash):
				t.Fatalf("the pair after the race: %+v %v", r, gerr)
			}
		})
	}
}

// TestMigrationGivesExistingIDsTheirFirstOwner: migration 000012 backfills ReleaseOwners
// from the releases registered before it, an id registered by several tenants going to the
// earliest: that tenant can add versions, the others keep (and can change) the rows they
// have but add none. SQLite only: it migrates a database of its own down and up again.
func TestMigrationGivesExistingIDsTheirFirstOwner(t *testing.T) {
	t.Parallel()
	w := newWorld(t, dbtest.SQLite())
	first, later := w.tenant(t), w.tenant(t)
	mg, err := migrate.New(w.db)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	if err := mg.Down(1); err != nil {
		t.Fatal(err)
	}
	p := body(t, refsA, api.ReleaseActive)
	canonical, _ := releases.Canonicalize(p.ContentRefs)
	err = w.db.Write(w.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		for _, r := range []struct{ tenant, av, at string }{
			{later, "b", "2026-01-02T00:00:00.000Z"}, {first, "a", "2026-01-01T00:00:00.000Z"},
		} {
			if _, err := tx.ExecContext(w.ctx, `INSERT INTO LoadedReleases (ReleaseId, AdapterVersion, TenantId, ManifestHash,
    ContentRefsJson, State, VerifiedAt, InFlightPolicy, Version)
VALUES ('shared-old', ?1, ?2, ?3, ?4, 1, ?5, NULL, (SELECT Value + 1 FROM RowVersionCounter))`,
				r.av, r.tenant, p.ManifestHash, string(canonical), r.at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Up(); err != nil {
		t.Fatal(err)
	}
	w.create(t, first, "shared-old", "c", api.ReleaseVerified, nil)
	_, _, err = w.put(t, later, "shared-old", "d", body(t, refsA, api.ReleaseVerified))
	wantConflict(t, err, first, "shared-old")
	old, err := w.store.Get(w.ctx, later, "shared-old", "b")
	if err != nil {
		t.Fatal(err)
	}
	w.move(t, later, old, api.ReleaseDraining, nil)
}

// TestHTTPTwoTenantsRaceForAReleaseID: over HTTP, the loser of two tenants racing for a new
// id (the winner's ownership lands just before the loser's, by fault injection) answers
// 409 release_conflict, never a 500, and registers nothing.
func TestHTTPTwoTenantsRaceForAReleaseID(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	winner, _, _ := s.tenantKeys(t)
	loser, _, runtime := s.tenantKeys(t)
	id := loser + "-contested"
	var fired atomic.Bool
	s.db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if !strings.HasPrefix(st.Query, "INSERT INTO ReleaseOwners") || fired.Swap(true) {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ReleaseOwners (ReleaseId, TenantId, CreatedAt) VALUES (?1, ?2, '2026-01-01T00:00:00.000Z')`,
			id, winner)
		return err
	})
	r := s.do(t, http.MethodPut, relPath(id, "1"), runtime, putBody(t, refsA, "active", ""), nil)
	s.db.SetStatementHook(nil)
	if !fired.Load() {
		t.Fatal("the hook never met the ownership insert")
	}
	wantProblem(t, r, http.StatusConflict, "release_conflict")
	wantProblem(t, s.do(t, http.MethodGet, relPath(id, "1"), runtime, "", nil), http.StatusNotFound, "not_found")
}
