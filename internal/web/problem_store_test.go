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
	}
	for _, c := range cases {
		e, _ := problemOf(c.err)
		if e.Code != c.code || e.Code.Status() != c.status || e.RetryAfter != c.retry {
			t.Errorf("problemOf(%v) = %s %d retry %v; want %s %d retry %v", c.err, e.Code, e.Code.Status(), e.RetryAfter, c.code, c.status, c.retry)
		}
	}
}
