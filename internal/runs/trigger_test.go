package runs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestRunGuardTrigger writes to Runs directly in SQL, as a buggy application could, and
// checks that the guard trigger refuses every illegal transition and identity change while
// letting the legal ones through.
func TestRunGuardTrigger(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		e := newEnv(t, tgt)
		// SQLite's version guard would refuse an unstamped write first, so stamp it: the
		// refusal must come from the transition guard.
		stamp, p := ", Version = (SELECT Value + 1 FROM RowVersionCounter)", "?1"
		if e.db.Dialect.Name() == "sqlserver" {
			stamp, p = "", "@p1"
		}
		exec := func(set string, r runs.Run) error {
			return e.db.Write(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				_, err := tx.ExecContext(e.ctx, "UPDATE Runs SET "+set+stamp+" WHERE RunId = "+p, r.RunID)
				return err
			})
		}
		queued := e.enqueue(spec("queued"))
		e.clock.Advance(time.Millisecond)
		leased := e.enqueue(spec("leased"))
		e.clock.Advance(time.Millisecond)
		ended := e.enqueue(spec("ended"))
		e.claim() // queued
		cl := e.claim()
		if cl.Run.RunID != leased.RunID {
			t.Fatalf("setup: claimed %v", cl.Run.Subject)
		}
		if _, err := e.svc.Cancel(e.ctx, e.tenant, ended.RunID); err != nil {
			t.Fatal(err)
		}
		if e.get(queued.RunID).State != api.RunLeased {
			t.Fatal("setup: the first run is not leased")
		}

		refused := []struct {
			name, set string
			run       runs.Run
		}{
			{"EndedToQueued", "State = 0, EndedAt = NULL, Outcome = NULL", ended},
			{"EndedToLeased", "State = 1, Epoch = Epoch + 1, HolderId = 'h', LeasedUntil = EndedAt, EndedAt = NULL, Outcome = NULL", ended},
			{"LeasedEpochChange", "Epoch = Epoch + 1", leased},
			{"LeasedEpochBack", "Epoch = Epoch - 1", leased},
			{"SubjectChange", "Subject = 'other'", leased},
			{"TenantChange", "TenantId = 'someone-else'", leased},
			{"KindChange", "Kind = 'other'", ended},
			{"ProjectChange", "ProjectId = 'p2'", ended},
			{"IdempotencyKeyChange", "IdempotencyKey = 'k'", leased},
			{"RequestHashChange", "RequestHash = 'h'", ended},
			{"EndedStaysEnded", "SubjectHead = 0", ended},
		}
		for _, c := range refused {
			err := exec(c.set, c.run)
			if err == nil {
				t.Errorf("%s: the trigger let it through", c.name)
				continue
			}
			if !errors.Is(err, sqldb.ErrRefused) {
				t.Errorf("%s: got %v, want a refusal", c.name, err)
			}
		}
		// Legal transitions still pass the guard.
		if err := exec("LeasedUntil = LeasedUntil", leased); err != nil {
			t.Errorf("LEASED to LEASED renewal refused: %v", err)
		}
		// The guard is tested with raw writes that break the service's invariants on
		// purpose, so these enqueues do not check them.
		q := must(e.svc.Get(e.ctx, e.tenant, mustEnqueue(t, e, spec("fresh"))))(t)
		if err := exec("State = 1, Epoch = Epoch + 1, HolderId = 'h', LeasedUntil = DueAt, SubjectHead = 0", q); err != nil {
			t.Errorf("QUEUED to LEASED with epoch+1 refused: %v", err)
		}
		q2 := must(e.svc.Get(e.ctx, e.tenant, mustEnqueue(t, e, spec("fresh-2"))))(t)
		if err := exec("State = 1, HolderId = 'h', LeasedUntil = DueAt, SubjectHead = 0", q2); err == nil || !strings.Contains(err.Error(), "transition") {
			t.Errorf("QUEUED to LEASED without a new epoch: got %v, want an illegal transition", err)
		}
		// A queued run stays queued only when its head marker alone changes.
		if err := exec("SubjectHead = 0", q2); err != nil {
			t.Errorf("QUEUED to QUEUED moving the head marker refused: %v", err)
		}
		if err := exec("SubjectHead = 1, Attempt = Attempt + 1", q2); err == nil || !strings.Contains(err.Error(), "transition") {
			t.Errorf("QUEUED to QUEUED changing more than the marker: got %v, want an illegal transition", err)
		}
		if err := exec("Attempt = Attempt + 1", q2); err == nil || !strings.Contains(err.Error(), "transition") {
			t.Errorf("QUEUED to QUEUED without a marker change: got %v, want an illegal transition", err)
		}
		// Only a queued run may be a head.
		if err := exec("SubjectHead = 1", leased); !errors.Is(err, sqldb.ErrRefused) {
			t.Errorf("head marker on a leased run: got %v, want a refusal", err)
		}
	})
}

func mustEnqueue(t *testing.T, e *env, s runs.Spec) uuid.UUID {
	t.Helper()
	r, _, err := e.svc.Enqueue(e.ctx, e.caller, s)
	if err != nil {
		t.Fatal(err)
	}
	return r.RunID
}
