package calls

import (
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// InsertQuery and FinishQuery are the store's statements a fault test's statement hook
// recognises, to play a concurrent writer's part just before them.
func InsertQuery(s *Store) string { return s.q.insert }

func FinishQuery(s *Store) string { return s.q.finish }

// InsertArgs and FinishArgs are the arguments the store sends with those statements, for a
// hook that plays a concurrent writer.
func InsertArgs(d sqldb.Dialect, id, attemptID uuid.UUID, tenantID string, now time.Time, n Draft) []any {
	return insertArgs(d, id, runs.Fenced{Attempt: attempts.Attempt{AttemptID: attemptID, TenantID: tenantID}, Now: now}, n)
}

func FinishArgs(d sqldb.Dialect, tenantID string, attemptID, callID uuid.UUID, f Finish, now time.Time) []any {
	return finishArgs(d, tenantID, attemptID, callID, f, now, nil)
}
