package projects_test

import (
	"context"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func ptr[T any](v T) *T { return &v }

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		db := tgt.Open(t, dbtest.Options{})
		store := projects.NewStore(db)
		ctx := context.Background()

		t.Run("CreateTakesDefaultsAndVersion", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			p, created, err := store.Put(ctx, tenant, "Alpha", projects.Change{})
			if err != nil || !created {
				t.Fatalf("create: created=%v err=%v", created, err)
			}
			if !p.Active || p.RetentionDays != api.DefaultRetentionDays || p.Version == 0 {
				t.Fatalf("defaults not applied: %+v", p)
			}
		})

		t.Run("UpdateNeedsIfMatchAndCurrentVersion", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			p, _, err := store.Put(ctx, tenant, "p", projects.Change{})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = store.Put(ctx, tenant, "p", projects.Change{Active: ptr(false)})
			if !apperr.Is(err, api.CodePreconditionRequired) {
				t.Fatalf("update without If-Match: got %v, want precondition_required", err)
			}
			stale := p.Version - 1
			_, _, err = store.Put(ctx, tenant, "p", projects.Change{Active: ptr(false), IfMatch: &stale})
			if !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("stale If-Match: got %v, want precondition_failed", err)
			}
			v := p.Version
			up, created, err := store.Put(ctx, tenant, "p", projects.Change{Active: ptr(false), RetentionDays: ptr(7), IfMatch: &v})
			if err != nil || created {
				t.Fatalf("update: created=%v err=%v", created, err)
			}
			if up.Active || up.RetentionDays != 7 || up.Version <= p.Version {
				t.Fatalf("update not applied or version not grown: before %+v after %+v", p, up)
			}
			// The old ETag is stale now.
			_, _, err = store.Put(ctx, tenant, "p", projects.Change{Active: ptr(true), IfMatch: &v})
			if !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("reused ETag: got %v, want precondition_failed", err)
			}
		})

		t.Run("IfMatchOnMissingProjectFails", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			v := sqldb.RowVersion(1)
			_, _, err := store.Put(ctx, tenant, "nope", projects.Change{IfMatch: &v})
			if !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("got %v, want precondition_failed", err)
			}
			if _, err := store.Get(ctx, tenant, "nope"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("a refused create wrote a row: %v", err)
			}
		})

		t.Run("OtherTenantSeesNothing", func(t *testing.T) {
			t.Parallel()
			a, b := dbtest.NewTenant(t, db), dbtest.NewTenant(t, db)
			p, _, err := store.Put(ctx, a, "shared-name", projects.Change{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Get(ctx, b, "shared-name"); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant read: got %v, want not_found", err)
			}
			v := p.Version
			if _, _, err := store.Put(ctx, b, "shared-name", projects.Change{Active: ptr(false), IfMatch: &v}); !apperr.Is(err, api.CodePreconditionFailed) {
				t.Fatalf("other tenant update: got %v, want precondition_failed (as for a missing project)", err)
			}
			list, err := store.List(ctx, b, "", 10)
			if err != nil || len(list) != 0 {
				t.Fatalf("other tenant list: %v %v", list, err)
			}
			got, err := store.Get(ctx, a, "shared-name")
			if err != nil || !got.Active {
				t.Fatalf("owner's project changed: %+v %v", got, err)
			}
		})

		t.Run("IdsAreCaseSensitive", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			for _, id := range []string{"proj", "PROJ", "Proj"} {
				if _, created, err := store.Put(ctx, tenant, id, projects.Change{}); err != nil || !created {
					t.Fatalf("create %q: created=%v err=%v", id, created, err)
				}
			}
			list, err := store.List(ctx, tenant, "", 10)
			if err != nil || len(list) != 3 {
				t.Fatalf("want 3 distinct projects, got %d (%v)", len(list), err)
			}
		})

		t.Run("ListPagesInIdOrder", func(t *testing.T) {
			t.Parallel()
			tenant := dbtest.NewTenant(t, db)
			for _, id := range []string{"c", "a", "b", "d"} {
				if _, _, err := store.Put(ctx, tenant, id, projects.Change{}); err != nil {
					t.Fatal(err)
				}
			}
			first, err := store.List(ctx, tenant, "", 2)
			if err != nil || len(first) != 2 || first[0].ProjectID != "a" || first[1].ProjectID != "b" {
				t.Fatalf("first page: %+v %v", first, err)
			}
			rest, err := store.List(ctx, tenant, "b", 10)
			if err != nil || len(rest) != 2 || rest[0].ProjectID != "c" || rest[1].ProjectID != "d" {
				t.Fatalf("second page: %+v %v", rest, err)
			}
		})
	})
}
