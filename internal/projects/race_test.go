package projects_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestPutRaces makes the paths a concurrent PUT takes on SQL Server run on SQLite (one
// writer, so it never races by itself): a statement hook writes what the winning request
// would have committed just before the loser's statement that meets it. The loser answers
// exactly as it would had it come second: a create that finds the project created is an
// update without If-Match (428 precondition_required); an update whose version moved is
// 412 precondition_failed. Each case has a database of its own (the hook is the
// database's).
func TestPutRaces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		before string // the loser's statement the winner's write lands ahead of
		winner string // the winner's write (SQLite)
		create bool   // the loser creates (else it updates with the current ETag)
		want   api.ProblemCode
	}{
		{"ConcurrentCreate", "INSERT INTO Projects",
			`INSERT INTO Projects (TenantId, ProjectId, Active, RetentionDays, CreatedAt, UpdatedAt, Version)
VALUES (?1, ?2, 0, 7, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', (SELECT Value + 1 FROM RowVersionCounter))`,
			true, api.CodePreconditionRequired},
		{"ConcurrentUpdate", "UPDATE Projects",
			`UPDATE Projects SET RetentionDays = 9, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE TenantId = ?1 AND ProjectId = ?2`,
			false, api.CodePreconditionFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := dbtest.SQLite().Open(t, dbtest.Options{})
			store, ctx := projects.NewStore(db), context.Background()
			tenant := dbtest.NewTenant(t, db)
			var ch projects.Change
			if !c.create {
				p, _, err := store.Put(ctx, tenant, "p", projects.Change{})
				if err != nil {
					t.Fatal(err)
				}
				ch.IfMatch, ch.Active = &p.Version, ptr(false)
			}
			var fired atomic.Bool
			db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if !strings.HasPrefix(st.Query, c.before) || fired.Swap(true) {
					return nil
				}
				_, err := tx.ExecContext(ctx, c.winner, tenant, "p")
				return err
			})
			_, created, err := store.Put(ctx, tenant, "p", ch)
			db.SetStatementHook(nil)
			if !fired.Load() {
				t.Fatalf("the hook never met %q", c.before)
			}
			if created || !apperr.Is(err, c.want) {
				t.Fatalf("loser: created=%v err=%v, want %s", created, err, c.want)
			}
		})
	}
}
