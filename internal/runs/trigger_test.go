package runs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/projects"
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

		// The identity changes name parents that exist, so that the guard refuses them and
		// not the foreign keys, which SQLite checks at the statement's end after a trigger's
		// RAISE(FAIL) (migrations/sqlite 000045) and which would report first.
		elsewhere := dbtest.NewTenant(t, e.db)
		if _, _, err := projects.NewStore(e.db).Put(e.ctx, elsewhere, "p1", projects.Change{}); err != nil {
			t.Fatal(err)
		}
		e.project("p2")
		refused := []struct {
			name, set string
			run       runs.Run
		}{
			{"EndedToQueued", "State = 0, EndedAt = NULL, Outcome = NULL", ended},
			{"EndedToLeased", "State = 1, Epoch = Epoch + 1, HolderId = 'h', LeasedUntil = EndedAt, EndedAt = NULL, Outcome = NULL", ended},
			{"LeasedEpochChange", "Epoch = Epoch + 1", leased},
			{"LeasedEpochBack", "Epoch = Epoch - 1", leased},
			{"SubjectChange", "Subject = 'other'", leased},
			{"TenantChange", "TenantId = '" + elsewhere + "'", leased},
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

// TestRunAndAttemptStampTriggers pins SQLite's rowversion emulation on the tables a cycle and
// a call write (migrations/sqlite 000038 and 000041, one AFTER trigger per write): a write not
// stamped above the row's version and at least the counter is refused and changes nothing, a
// stamped one advances the counter to its version, and a statement that stamps several rows
// gives them one version and the counter that version once.
func TestRunAndAttemptStampTriggers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite())
	r := e.enqueue(spec("stamped"))
	e.clock.Advance(time.Millisecond)
	other := e.enqueue(spec("stamped-2"))
	cl := e.claim()
	cl2 := e.claim()
	if cl.Run.RunID != r.RunID || cl2.Run.RunID != other.RunID {
		t.Fatalf("setup: claimed %v and %v", cl.Run.Subject, cl2.Run.Subject)
	}
	var counter int64
	read := func(q string, args ...any) int64 {
		t.Helper()
		var v int64
		if err := e.db.Raw().Get(&v, q, args...); err != nil {
			t.Fatal(err)
		}
		return v
	}
	counterNow := func() int64 { return read(`SELECT Value FROM RowVersionCounter WHERE Id = 1`) }
	runVersion := func(id uuid.UUID) int64 { return read(`SELECT Version FROM Runs WHERE RunId = ?`, id) }
	attemptVersion := func(id uuid.UUID) int64 {
		return read(`SELECT Version FROM ExecutionAttempts WHERE AttemptId = ?`, id)
	}
	exec := func(q string, args ...any) error {
		return e.db.Write(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(e.ctx, q, args...)
			return err
		})
	}
	const stamp = `(SELECT Value + 1 FROM RowVersionCounter)`

	counter = counterNow()
	rv, av := runVersion(r.RunID), attemptVersion(cl.Attempt.AttemptID)
	refused := []struct{ name, q string }{
		{"RunUnstamped", `UPDATE Runs SET LeasedUntil = LeasedUntil WHERE RunId = ?1`},
		{"RunSameVersion", `UPDATE Runs SET LeasedUntil = LeasedUntil, Version = Version WHERE RunId = ?1`},
		{"RunOlderVersion", `UPDATE Runs SET LeasedUntil = LeasedUntil, Version = Version - 1 WHERE RunId = ?1`},
		{"RunBelowCounter", `UPDATE Runs SET LeasedUntil = LeasedUntil, Version = Version + 1 WHERE RunId = ?1`},
		{"AttemptUnstamped", `UPDATE ExecutionAttempts SET Phase = Phase WHERE RunId = ?1`},
		{"AttemptSameVersion", `UPDATE ExecutionAttempts SET Phase = Phase, Version = Version WHERE RunId = ?1`},
		{"AttemptBelowCounter", `UPDATE ExecutionAttempts SET Phase = Phase, Version = Version + 1 WHERE RunId = ?1`},
		{"AttemptInsertBelowCounter", `INSERT INTO ExecutionAttempts (AttemptId, RunId, StepId, TenantId, ProjectId, LeaseId,
    FencingToken, SnapshotId, ReleaseId, AdapterVersion, AgentId, ModelProfileId, State, Phase, CorrectionCount,
    MaxCorrections, StartedAt, Version)
SELECT 'a-' || AttemptId, RunId, StepId, TenantId, ProjectId, 'l-' || LeaseId, FencingToken + 1, SnapshotId, ReleaseId,
    AdapterVersion, AgentId, ModelProfileId, State, Phase, CorrectionCount, MaxCorrections, StartedAt, Version
FROM ExecutionAttempts WHERE RunId = ?1`},
	}
	if rv >= counter || av >= counter {
		t.Fatalf("setup: versions %d and %d not below the counter %d", rv, av, counter)
	}
	for _, c := range refused {
		err := exec(c.q, r.RunID)
		if err == nil || !strings.Contains(err.Error(), "rowversion not stamped") || !errors.Is(err, sqldb.ErrRefused) {
			t.Errorf("%s: got %v, want the refusal 'rowversion not stamped'", c.name, err)
		}
	}
	if runVersion(r.RunID) != rv || attemptVersion(cl.Attempt.AttemptID) != av || counterNow() != counter {
		t.Fatal("a refused write changed a version or the counter")
	}

	if err := exec(`UPDATE Runs SET LeasedUntil = LeasedUntil, Version = `+stamp+` WHERE RunId = ?1`, r.RunID); err != nil {
		t.Fatalf("stamped run update: %v", err)
	}
	if v := runVersion(r.RunID); v != counter+1 || counterNow() != v {
		t.Fatalf("stamped run update: version %d, counter %d; want both %d", v, counterNow(), counter+1)
	}
	// The row holds the counter's value now: keeping it is still not a stamp.
	if err := exec(`UPDATE Runs SET LeasedUntil = LeasedUntil, Version = Version WHERE RunId = ?1`, r.RunID); err == nil ||
		!strings.Contains(err.Error(), "rowversion not stamped") {
		t.Errorf("update keeping the counter's version: got %v, want the refusal 'rowversion not stamped'", err)
	}
	// CallRecords (migrations/sqlite 000041): a call stamped below the counter is refused; a
	// stamped one advances it; an update must stamp above the row's version.
	const insertCall = `INSERT INTO CallRecords (CallId, AttemptId, TenantId, Sequence, Kind, Target, RequestHash, Status,
    StartedAt, Version)
SELECT ?2, AttemptId, TenantId, 0, 0, 'model://a', 'r', 'started', StartedAt, %s FROM ExecutionAttempts WHERE AttemptId = ?1`
	callID := uuid.New()
	counter = counterNow()
	if err := exec(fmt.Sprintf(insertCall, "Version"), cl.Attempt.AttemptID, callID); err == nil ||
		!strings.Contains(err.Error(), "rowversion not stamped") {
		t.Errorf("call stamped below the counter: got %v, want the refusal 'rowversion not stamped'", err)
	}
	if err := exec(fmt.Sprintf(insertCall, stamp), cl.Attempt.AttemptID, callID); err != nil {
		t.Fatalf("stamped call: %v", err)
	}
	if v := read(`SELECT Version FROM CallRecords WHERE CallId = ?`, callID); v != counter+1 || counterNow() != v {
		t.Fatalf("stamped call: version %d, counter %d; want both %d", v, counterNow(), counter+1)
	}
	if err := exec(`UPDATE CallRecords SET Status = 'succeeded', Version = Version WHERE CallId = ?1`, callID); err == nil ||
		!strings.Contains(err.Error(), "rowversion not stamped") {
		t.Errorf("call update keeping its version: got %v, want the refusal 'rowversion not stamped'", err)
	}
	if err := exec(`UPDATE CallRecords SET Status = 'succeeded', Version = `+stamp+` WHERE CallId = ?1`, callID); err != nil {
		t.Errorf("stamped call update: %v", err)
	}
	// Two attempts in one statement: one version, the counter advanced to it once.
	counter = counterNow()
	err := exec(`UPDATE ExecutionAttempts SET Phase = Phase, Version = `+stamp+` WHERE AttemptId IN (?1, ?2)`,
		cl.Attempt.AttemptID, cl2.Attempt.AttemptID)
	if err != nil {
		t.Fatalf("stamped update of two attempts: %v", err)
	}
	if a, b := attemptVersion(cl.Attempt.AttemptID), attemptVersion(cl2.Attempt.AttemptID); a != counter+1 || b != a || counterNow() != a {
		t.Fatalf("stamped update of two attempts: versions %d and %d, counter %d; want all %d", a, b, counterNow(), counter+1)
	}
}

// TestRunChecksWithoutLists pins the form migrations/sqlite 000040 gives the CHECK
// constraints of Runs on Band, State and Outcome (equalities joined by OR: SQLite builds a
// lookup table per statement for an IN list of three or more) and that they still refuse
// what the IN lists refused and pass what they passed.
func TestRunChecksWithoutLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite())
	var ddl string
	if err := e.db.Raw().Get(&ddl, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'Runs'`); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CHECK (Band = 0 OR Band = 1 OR Band = 2)",
		"CHECK (State = 0 OR State = 1 OR State = 2)",
		"CHECK (Outcome = 'succeeded' OR Outcome = 'failed' OR Outcome = 'cancelled' OR Outcome = 'exhausted' OR Outcome = 'deadline')",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("Runs lacks %s", want)
		}
	}
	if strings.Contains(ddl, " IN (") {
		t.Errorf("Runs still has an IN list in a constraint:\n%s", ddl)
	}

	leased := e.enqueue(spec("checked"))
	e.claim()
	exec := func(set string) error {
		return e.db.Write(e.ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
			_, err := tx.ExecContext(e.ctx, `UPDATE Runs SET `+set+`, Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE RunId = ?1`, leased.RunID)
			return err
		})
	}
	for _, set := range []string{
		"Band = 3", "Band = -1", "Band = 1.5", "Band = '1x'",
		"State = 3",
		"State = 2, EndedAt = LeasedUntil, LeasedUntil = NULL, Outcome = 'bogus'",
		"State = 2, EndedAt = LeasedUntil, LeasedUntil = NULL, Outcome = 'Succeeded'",
	} {
		if err := exec(set); err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("%s: got %v, want a CHECK constraint failure", set, err)
		}
	}
	for _, set := range []string{"Band = 2", "Band = 0", "State = 2, EndedAt = LeasedUntil, LeasedUntil = NULL, Outcome = 'deadline'"} {
		if err := exec(set); err != nil {
			t.Errorf("%s: refused: %v", set, err)
		}
	}
}
