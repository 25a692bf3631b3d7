package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
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

// TestDatabaseRefusalIsDocumentedOnWrites: the code problemOf gives a refused write is in
// the document of every route that inserts or updates, and of no read or delete.
func TestDatabaseRefusalIsDocumentedOnWrites(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	for _, m := range methods {
		s.Route(m, "/v1/things", Op{ID: "thing" + m, Tag: "System", Summary: "t", Status: http.StatusNoContent}, nil)
	}
	e, _ := problemOf(fmt.Errorf("write: %w", sqldb.ErrRefused))
	doc := docJSON(t, s)
	for _, m := range methods {
		listed := fmt.Sprint(docCodes(t, doc, m, e.Code.Status()))
		want := insertsOrUpdates(m)
		if got := strings.Contains(listed, string(e.Code)); got != want {
			t.Errorf("%s lists %s: %v, want %v (codes %s)", m, e.Code, got, want, listed)
		}
	}
}

// docCodes is the problem codes the document lists for /v1/things with method at status.
func docCodes(t *testing.T, doc map[string]any, method string, status int) any {
	t.Helper()
	r, ok := dig(t, doc, "paths", "/v1/things", strings.ToLower(method), "responses").(map[string]any)[strconv.Itoa(status)]
	if !ok {
		return nil
	}
	return r.(map[string]any)["x-problem-codes"]
}
