package decisions_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/decisions"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestAnswerRaces makes the paths an answer racing another answer (or the expiry) takes on
// SQL Server run on SQLite, where one writer never races: a statement hook writes the
// winner's close just before the loser's statement that would meet it. Before the lock
// read, the loser sees the decision closed; between its check and its update (which SQL
// Server's locks rule out, so this is the belt to those braces) its update finds nothing
// and it answers from a fresh read. Either way: 409 decision_closed, never a 500.
func TestAnswerRaces(t *testing.T) {
	t.Parallel()
	const winnerAnswers = `UPDATE DecisionRequests SET Status = 'rejected', AnsweredBy = 'winner', AnsweredAt = ExpiresAt,
    Version = (SELECT Value + 1 FROM RowVersionCounter) WHERE DecisionId = ?1`
	const expiryMarks = `UPDATE DecisionRequests SET Status = 'expired', Version = (SELECT Value + 1 FROM RowVersionCounter)
WHERE DecisionId = ?1`
	cases := []struct {
		name   string
		before string // the loser's statement (a prefix or a fragment of it)
		winner string
	}{
		{"AnotherAnswerBeforeTheLock", "FROM DecisionRequests AS d WHERE", winnerAnswers},
		{"AnotherAnswerBeforeTheUpdate", "UPDATE DecisionRequests SET Status = ?3", winnerAnswers},
		{"ExpiryBeforeTheUpdate", "UPDATE DecisionRequests SET Status = ?3", expiryMarks},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dbtest.SQLite())
			d := e.ask(e.claimed("s"), decisions.Request{Kind: api.DecisionApproval})
			var fired atomic.Bool
			e.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if !strings.Contains(st.Query, c.before) || fired.Swap(true) {
					return nil
				}
				_, err := tx.ExecContext(ctx, c.winner, d.DecisionID)
				return err
			})
			_, err := e.store.Answer(e.Ctx, e.Tenant, d.DecisionID, approve(d))
			e.DB.SetStatementHook(nil)
			if !fired.Load() {
				t.Fatalf("the hook never met %q", c.before)
			}
			if !apperr.Is(err, api.CodeDecisionClosed) {
				t.Fatalf("the losing answer: %v, want decision_closed", err)
			}
			if got := e.get(d.DecisionID); got.Status != api.DecisionPending || got.Version != d.Version {
				// The winner wrote in the loser's transaction: the refusal rolled both back.
				t.Fatalf("the loser's refusal changed the decision: %+v", got)
			}
		})
	}
}

// TestHTTPAnswerRace: over HTTP, an answer whose update meets another answer that landed
// after its check (fault injection) answers 409 decision_closed, never a 500.
func TestHTTPAnswerRace(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := s.client(t)
	cl := s.claim(t, c, "review:race")
	r := s.Do(t, http.MethodPost, "/v1/attempts/"+cl.Attempt.AttemptID+"/decisions", c.runtime,
		fmt.Sprintf(`{"fencingToken":%d,"kind":"approval"}`, cl.Lease.FencingToken), nil)
	apitest.Want(t, r, http.StatusCreated, "")
	d := apitest.DecodeAs[wireDecision](t, r)
	var fired atomic.Bool
	s.DB.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
		if !strings.HasPrefix(st.Query, "UPDATE DecisionRequests SET Status = ?3") || fired.Swap(true) {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE DecisionRequests SET Status = 'approved', AnsweredBy = 'winner',
    Version = (SELECT Value + 1 FROM RowVersionCounter) WHERE DecisionId = ?1`, d.DecisionID)
		return err
	})
	a := s.Do(t, http.MethodPost, "/v1/decisions/"+d.DecisionID+"/answer", c.admin, `{"status":"rejected"}`,
		map[string]string{"If-Match": r.Header.Get("ETag")})
	s.DB.SetStatementHook(nil)
	if !fired.Load() {
		t.Fatal("the hook never met the answer's update")
	}
	apitest.Want(t, a, http.StatusConflict, "decision_closed")
}
