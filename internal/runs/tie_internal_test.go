package runs

import (
	"fmt"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestHeadMovesToAnOlderTie: a run queued in the same millisecond as its subject's head,
// with a smaller RunId, is older in queue order (QueuedAt, then RunId) and takes the
// marker over: one statement clears the old head and marks the new one, which a unique
// index checked row by row (SQLite) must allow. Ids made later sort greater on SQLite
// (sqldb.Dialect.NewID), so the tie comes from another process sharing the file, or on SQL
// Server from ids random within their millisecond; the test queues it with the enqueue's
// own statements and an id below the head's.
func TestHeadMovesToAnOlderTie(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newFaultEnv(t, tgt)
		for i := range 3 {
			subject := fmt.Sprintf("tie-%d", i)
			first, _, err := e.svc.Enqueue(e.ctx, e.caller, e.spec(subject))
			if err != nil {
				t.Fatal(err)
			}
			older := first.RunID
			older[0], older[1] = 0, byte(i) // below the head's id, same millisecond
			err = e.db.Write(e.ctx, sqldb.TenantScope(e.tenant), func(tx *sqldb.Tx) error {
				if err := e.svc.lockSubject(e.ctx, tx, e.tenant, subject); err != nil {
					return err
				}
				tie := Run{RunID: older, TenantID: e.tenant, ProjectID: first.ProjectID, Subject: subject, Kind: first.Kind,
					AgentID: first.AgentID, StepID: first.StepID, SnapshotID: first.SnapshotID, Band: first.Band,
					MaxAttempts: first.MaxAttempts, MaxCorrections: first.MaxCorrections, QueuedAt: first.QueuedAt,
					DueAt: first.DueAt, CreatedBy: "k"}
				if _, err := tx.ExecContext(e.ctx, e.svc.q.insert, insertArgs(tx.Dialect, tie, nil)...); err != nil {
					return err
				}
				_, err := e.svc.syncHead(e.ctx, tx, e.tenant, subject)
				return err
			})
			if err != nil {
				t.Fatalf("queue a tie: %v", err)
			}
			e.agree()
			if got := e.get(t, older); !got.QueuedAt.Equal(first.QueuedAt) {
				t.Fatalf("the tie was queued at %v, the head at %v", got.QueuedAt, first.QueuedAt)
			}
			if head := e.headOf(t, subject); head != older.String() {
				t.Fatalf("head %s, want the older tie %s", head, older)
			}
		}
	})
}

func (e *faultEnv) headOf(t *testing.T, subject string) string {
	t.Helper()
	var id string
	err := e.db.Raw().Get(&id, e.db.Raw().Rebind(`SELECT RunId FROM Runs WHERE TenantId = ? AND Subject = ? AND SubjectHead = 1`), e.tenant, subject)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
