package seqlog_test

import (
	"errors"
	"math"
	"testing"

	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/seqlog"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func TestSequenceFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seq  int
		want bool
	}{{-1, true}, {0, false}, {math.MaxInt32, false}, {math.MaxInt32 + 1, true}} {
		got := seqlog.SequenceFields(c.seq)
		if (len(got) == 1 && got[0].Field == "sequence") != c.want || len(got) > 1 {
			t.Errorf("sequence %d: fields %v, want refused=%v", c.seq, got, c.want)
		}
	}
}

func TestInsertedWrapsWhatIsNotAConflict(t *testing.T) {
	t.Parallel()
	if err := seqlog.Inserted(nil, "insert x", "UX_X"); err != nil {
		t.Fatalf("no error: %v", err)
	}
	base := errors.New("disk full")
	err := seqlog.Inserted(base, "insert x", "UX_X")
	if !errors.Is(err, base) || errors.Is(err, runs.ErrTaken) || err.Error() != "insert x: disk full" {
		t.Fatalf("got %v", err)
	}
}

func TestInsertedMapsTheSequenceIndexToTaken(t *testing.T) {
	t.Parallel()
	taken := &sqldb.ConflictError{Constraint: "UX_X_Attempt_Sequence"}
	if err := seqlog.Inserted(taken, "insert x", "UX_X_Attempt_Sequence"); !errors.Is(err, runs.ErrTaken) {
		t.Fatalf("the sequence index's refusal: %v, want runs.ErrTaken", err)
	}
	other := &sqldb.ConflictError{Constraint: "UX_Other"}
	if err := seqlog.Inserted(other, "insert x", "UX_X_Attempt_Sequence"); errors.Is(err, runs.ErrTaken) || !errors.Is(err, other) {
		t.Fatalf("another index's refusal: %v, want it wrapped, not taken", err)
	}
}
