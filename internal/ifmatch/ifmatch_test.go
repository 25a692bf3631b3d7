package ifmatch_test

import (
	"testing"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/ifmatch"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestModes: what each mode answers to a request without a condition, with a stale one and
// with the current one, before anything is read (Absent), on a create and on an update.
func TestModes(t *testing.T) {
	t.Parallel()
	const cur = sqldb.RowVersion(7)
	stale, current := sqldb.RowVersion(6), cur
	const (
		ok  = api.ProblemCode("")
		req = api.CodePreconditionRequired
		bad = api.CodePreconditionFailed
	)
	cases := []struct {
		mode                    ifmatch.Mode
		absent                  api.ProblemCode
		updateNone, updateStale api.ProblemCode
		createNone, createWith  api.ProblemCode
		takes, requires, may428 bool
	}{
		{ifmatch.None, ok, ok, bad, ok, bad, false, false, false},
		{ifmatch.Optional, ok, ok, bad, ok, bad, true, false, false},
		{ifmatch.Required, req, req, bad, ok, bad, true, true, true},
		{ifmatch.ToUpdate, ok, req, bad, ok, bad, true, false, true},
	}
	for _, c := range cases {
		got := []api.ProblemCode{
			apperr.CodeOf(ifmatch.Absent(c.mode)),
			apperr.CodeOf(ifmatch.Update(c.mode, nil, cur, "x")),
			apperr.CodeOf(ifmatch.Update(c.mode, &stale, cur, "x")),
			apperr.CodeOf(ifmatch.Create(nil, "x")),
			apperr.CodeOf(ifmatch.Create(&current, "x")),
		}
		want := []api.ProblemCode{c.absent, c.updateNone, c.updateStale, c.createNone, c.createWith}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("mode %d: answers %q, want %q", c.mode, got, want)
				break
			}
		}
		if err := ifmatch.Update(c.mode, &current, cur, "x"); err != nil {
			t.Errorf("mode %d: the current version refused: %v", c.mode, err)
		}
		if c.mode.Takes() != c.takes || c.mode.Requires() != c.requires || c.mode.MayAnswer428() != c.may428 {
			t.Errorf("mode %d: takes %v requires %v may428 %v", c.mode, c.mode.Takes(), c.mode.Requires(), c.mode.MayAnswer428())
		}
	}
}
