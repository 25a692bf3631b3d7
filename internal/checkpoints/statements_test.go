package checkpoints_test

import (
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/attempts"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

// TestAppendIsThreeStatements bounds a fenced checkpoint append (issue 12): the fence (one
// read of attempt and run), the insert, the attempt's update. A repeat costs one read more,
// and only when the insert is refused.
func TestAppendIsThreeStatements(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		s := checkpoints.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		n := checkpoints.Draft{Sequence: 1, Phase: api.PhaseActing, AdapterStateRef: "ref", AdapterVersion: "1", Hash: "h"}
		stop := apitest.Statements(e.DB)
		if _, created, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); err != nil || !created {
			t.Fatalf("append: %v", err)
		}
		if got := stop(); len(got) > 3 {
			t.Errorf("an append sent %d statements, want at most 3: %q", len(got), got)
		}
		stop = apitest.Statements(e.DB)
		if _, created, err := s.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); err != nil || created {
			t.Fatalf("repeat: %v", err)
		}
		if got := stop(); len(got) > 3 {
			t.Errorf("a repeat sent %d statements, want at most 3: %q", len(got), got)
		}
	})
}

// TestAppendMovesPhaseAndResumePointForward: an appended checkpoint's phase becomes the
// attempt's phase and it becomes LastCheckpointId, in the append's one update, only when
// its sequence is the attempt's highest: a late append of a lower sequence is stored but
// moves neither (the highest sequence is the holder's latest progress).
func TestAppendMovesPhaseAndResumePointForward(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Parallel()
		e := apitest.NewEnv(t, tgt, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		s := checkpoints.NewStore(e.DB, e.Svc)
		cl := e.Lease()
		id, tok := cl.Attempt.AttemptID, cl.Lease.FencingToken
		appendAt := func(seq int, phase api.Phase) checkpoints.Checkpoint {
			t.Helper()
			c, _, err := s.Append(e.Ctx, e.Tenant, id, tok, checkpoints.Draft{Sequence: seq, Phase: phase, AdapterStateRef: "r",
				AdapterVersion: "1", Hash: "h"})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		attempt := func() attempts.Attempt {
			t.Helper()
			a, err := e.Svc.PatchAttempt(e.Ctx, e.Tenant, id, tok, runs.AttemptPatch{})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		c5 := appendAt(5, api.PhaseActing)
		if a := attempt(); a.Phase != api.PhaseActing || a.LastCheckpointID.UUID != c5.CheckpointID {
			t.Fatalf("after sequence 5: phase %s, last %v", a.Phase, a.LastCheckpointID)
		}
		appendAt(3, api.PhasePlanning) // late
		if a := attempt(); a.Phase != api.PhaseActing || a.LastCheckpointID.UUID != c5.CheckpointID {
			t.Fatalf("after a late sequence 3: phase %s, last %v; want sequence 5's", a.Phase, a.LastCheckpointID)
		}
		c6 := appendAt(6, api.PhaseObserving)
		if a := attempt(); a.Phase != api.PhaseObserving || a.LastCheckpointID.UUID != c6.CheckpointID {
			t.Fatalf("after sequence 6: phase %s, last %v", a.Phase, a.LastCheckpointID)
		}
	})
}
