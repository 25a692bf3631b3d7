package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// A store error that no store turned into a domain code still gets a code of its own, and
// an unavailable database asks for the wait Azure SQL's transient errors ask for.
func TestStoreSentinelsBecomeProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		code   api.ProblemCode
		status int
		retry  time.Duration
	}{
		{fmt.Errorf("insert call: %w", sqldb.ErrBadReference), api.CodeNotFound, http.StatusNotFound, 0},
		{fmt.Errorf("end run: %w", sqldb.ErrRefused), api.CodeIllegalTransition, http.StatusConflict, 0},
		{fmt.Errorf("claim: %w", sqldb.ErrUnavailable), api.CodeDatabaseUnavailable, http.StatusServiceUnavailable, 5 * time.Second},
		// A collation conflict is a defect of the statement: a 500, logged (not known).
		{fmt.Errorf("end run: %w", &sqldb.StatementError{Statement: "UPDATE dbo.Runs SET State = 2", Err: sqldb.ErrCollationConflict}),
			api.CodeInternal, http.StatusInternalServerError, 0},
	}
	for _, c := range cases {
		e, known := problemOf(c.err)
		if c.status >= 500 && c.code == api.CodeInternal && known {
			t.Errorf("problemOf(%v) is known: the 500 would not be logged", c.err)
		}
		if e.Code != c.code || e.Code.Status() != c.status || e.RetryAfter != c.retry {
			t.Errorf("problemOf(%v) = %s %d retry %v; want %s %d retry %v", c.err, e.Code, e.Code.Status(), e.RetryAfter, c.code, c.status, c.retry)
		}
	}
}

// TestRefusedWriteIsTheRefusalsProblem: the code the document lists for a refused write
// (RefusedWrite) is the one a refused write answers.
func TestRefusedWriteIsTheRefusalsProblem(t *testing.T) {
	t.Parallel()
	e, _ := problemOf(fmt.Errorf("write: %w", sqldb.ErrRefused))
	if code, ok := RefusedWrite(http.MethodPost); code != e.Code || !ok {
		t.Errorf("RefusedWrite(POST) = %s, %v; a refused write answers %s", code, ok, e.Code)
	}
}
