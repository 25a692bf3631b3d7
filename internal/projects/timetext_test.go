package projects_test

import (
	"context"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestProjectTimesReadAsText: on SQLite a project's put, read and listing answer its times
// as text (no time converted by the driver, sqldb.DB.DriverTimes), and they come back as
// written, to the millisecond, in UTC.
func TestProjectTimesReadAsText(t *testing.T) {
	t.Parallel()
	clock := dbtest.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.UTC))
	db := dbtest.SQLite().Open(t, dbtest.Options{Clock: clock.Now})
	store := projects.NewStore(db)
	ctx := context.Background()
	tenant := dbtest.NewTenant(t, db)
	created := sqldb.Truncate(clock.Now())
	before := db.DriverTimes()
	p, _, err := store.Put(ctx, tenant, "p", projects.Change{})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(1500 * time.Millisecond)
	off := false
	ver := p.Version
	if _, _, err := store.Put(ctx, tenant, "p", projects.Change{Active: &off, IfMatch: &ver}); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, tenant, "p")
	if err != nil {
		t.Fatal(err)
	}
	list, err := store.List(ctx, tenant, "", 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %d, %v", len(list), err)
	}
	if n := db.DriverTimes() - before; n != 0 {
		t.Fatalf("%d times were converted by the driver", n)
	}
	updated := created.Add(1500 * time.Millisecond)
	for i, p := range []projects.Project{got, list[0]} {
		if !p.CreatedAt.Equal(created) || !p.UpdatedAt.Equal(updated) || p.CreatedAt.Location() != time.UTC {
			t.Fatalf("read %d: created %v updated %v, want %v and %v", i, p.CreatedAt, p.UpdatedAt, created, updated)
		}
	}
}
