package runs_test

import (
	"os"
	"testing"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestFirstAssertions holds what reading the T-SQL cannot settle (issue 18, docs/tsql-notes.md),
// run first by the SQL Server CI job (.github/workflows/ci.yml) against each image, with
// READ_COMMITTED_SNAPSHOT on and off (LEDGER_TEST_EXPECT_RCSI says which the job set up):
//  1. the claim's table hints, ROWLOCK with READCOMMITTEDLOCK, are accepted;
//  2. a claim leases under the database's RCSI setting;
//  3. syncHead moves the head of a subject whose runs were all queued in one millisecond.
//
// On SQLite the hints are left out (they are T-SQL); the claims and the head order run.
func TestFirstAssertions(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		if tgt.Name == "sqlserver" {
			err := e.db.Write(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
				var ids []uuid.UUID
				if err := tx.SelectContext(e.ctx, &ids, `SELECT TOP (1) RunId FROM dbo.Runs WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE TenantId = @p1 AND State = 0 ORDER BY RunId OPTION (MAXDOP 1);`, e.tenant); err != nil {
					return err
				}
				return tx.SelectContext(e.ctx, &ids, `SELECT TOP (1) RunId FROM dbo.Runs WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
WHERE TenantId = @p1 AND State = 0 ORDER BY RunId OPTION (MAXDOP 1);`, e.tenant)
			})
			if err != nil {
				t.Fatalf("the hint pair ROWLOCK, READCOMMITTEDLOCK was refused: %v", err)
			}
			var rcsi int
			err = e.db.Read(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				return tx.GetContext(e.ctx, &rcsi, `SELECT CAST(is_read_committed_snapshot_on AS int) FROM sys.databases WHERE database_id = DB_ID();`)
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := os.Getenv("LEDGER_TEST_EXPECT_RCSI"); want != "" && (want == "on") != (rcsi == 1) {
				t.Fatalf("READ_COMMITTED_SNAPSHOT is %d, the job expects %s", rcsi, want)
			}
			t.Logf("READ_COMMITTED_SNAPSHOT on: %v", rcsi == 1)
		}
		// Three runs of one subject in one millisecond (the clock is injected and stands
		// still): the head moves from each ended run to the next, and every run is leased
		// exactly once.
		queued := map[uuid.UUID]bool{}
		for range 3 {
			queued[e.enqueue(spec("same-millisecond")).RunID] = true
		}
		for range 3 {
			cl := e.claim()
			if !queued[cl.Run.RunID] {
				t.Fatalf("claimed %s, not a queued run of the subject (or twice)", cl.Run.RunID)
			}
			delete(queued, cl.Run.RunID)
			if _, err := e.svc.Complete(e.ctx, e.tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken,
				runs.Completion{State: api.AttemptSucceeded}); err != nil {
				t.Fatalf("complete: %v", err)
			}
			e.agree()
		}
		if _, err := e.svc.Claim(e.ctx, e.caller, claimReq("holder-1")); err == nil {
			t.Fatal("a fourth claim leased something")
		}
	})
}
