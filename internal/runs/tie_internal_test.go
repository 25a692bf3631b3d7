package runs

import (
	"fmt"
	"testing"

	"github.com/ledger-dev/ledger/internal/dbtest"
)

// TestHeadMovesToAnOlderTie: a run enqueued in the same millisecond as its subject's head,
// with a smaller RunId, is older in queue order (QueuedAt, then RunId) and takes the
// marker over: one statement clears the old head and marks the new one, which a unique
// index checked row by row (SQLite) must allow.
func TestHeadMovesToAnOlderTie(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := newFaultEnv(t, tgt)
		moved := 0
		for i := range 40 {
			subject := fmt.Sprintf("tie-%d", i)
			first, _, err := e.svc.Enqueue(e.ctx, e.caller, e.spec(subject))
			if err != nil {
				t.Fatal(err)
			}
			second, _, err := e.svc.Enqueue(e.ctx, e.caller, e.spec(subject)) // same clock instant
			if err != nil {
				t.Fatalf("enqueue a tie: %v", err)
			}
			e.agree()
			if got := e.get(t, second.RunID); got.QueuedAt.Equal(first.QueuedAt) && e.headOf(t, subject) == second.RunID.String() {
				moved++
			}
		}
		if moved == 0 {
			t.Fatal("no tie moved the marker in 40 tries: the case did not run")
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
