package checkpoints_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apitest"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/checkpoints"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/runs"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		for _, c := range storeCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, newEnv(t, tgt))
			})
		}
	})
}

var storeCases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"FencedAppendIsStoredAndRead", func(t *testing.T, e *env) {
		cl := e.Lease()
		n := cp(0, "h0")
		c := e.append(cl, n)
		if c.CheckpointID == uuid.Nil || c.AttemptID != cl.Attempt.AttemptID || c.Sequence != 0 || c.Phase != api.PhaseActing ||
			c.AdapterStateRef != n.AdapterStateRef || c.AdapterVersion != "1.0" || c.Hash != "h0" ||
			c.ContextSnapshotRef == nil || *c.ContextSnapshotRef != *n.ContextSnapshotRef || !c.CreatedAt.Equal(epoch) {
			t.Fatalf("appended %+v", c)
		}
		got, err := e.store.Get(e.Ctx, e.Tenant, cl.Attempt.AttemptID, c.CheckpointID)
		if err != nil {
			t.Fatal(err)
		}
		// The stored row round-trips exactly: ids, times, the optional ref.
		if got.CheckpointID != c.CheckpointID || got.Hash != c.Hash || !got.CreatedAt.Equal(c.CreatedAt) ||
			got.ContextSnapshotRef == nil || *got.ContextSnapshotRef != *c.ContextSnapshotRef || got.Phase != c.Phase {
			t.Fatalf("read back %+v, want %+v", got, c)
		}
		if a := e.attempt(cl.Attempt.AttemptID); !a.LastCheckpointID.Valid || a.LastCheckpointID.UUID != c.CheckpointID {
			t.Fatalf("LastCheckpointId %v, want %s", a.LastCheckpointID, c.CheckpointID)
		}
		// A checkpoint without a context snapshot stores NULL.
		n1 := cp(1, "h1")
		n1.ContextSnapshotRef = nil
		if c1 := e.append(cl, n1); c1.ContextSnapshotRef != nil {
			t.Fatalf("context snapshot ref %v, want none", *c1.ContextSnapshotRef)
		}
		// A checkpoint of another attempt in the path is not found.
		other := e.Lease()
		if _, err := e.store.Get(e.Ctx, e.Tenant, other.Attempt.AttemptID, c.CheckpointID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("read through another attempt: got %v, want not_found", err)
		}
	}},

	{"RepeatAnswersStoredRowAndOtherHashConflicts", func(t *testing.T, e *env) {
		cl := e.Lease()
		first := e.append(cl, cp(3, "hash-a"))
		e.Clock.Advance(time.Second)
		again, created, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(3, "hash-a"))
		if err != nil || created || again.CheckpointID != first.CheckpointID || !again.CreatedAt.Equal(first.CreatedAt) {
			t.Fatalf("repeat: created=%v err=%v got %+v, want the first row", created, err, again)
		}
		_, _, err = e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(3, "hash-b"))
		if !apperr.Is(err, api.CodeSequenceConflict) {
			t.Fatalf("other hash: got %v, want sequence_conflict", err)
		}
		// Hashes compare exactly (case-sensitively on both dialects).
		_, _, err = e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(3, "HASH-A"))
		if !apperr.Is(err, api.CodeSequenceConflict) {
			t.Fatalf("hash differing in case: got %v, want sequence_conflict", err)
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 1 || cs[0].Hash != "hash-a" {
			t.Fatalf("stored %+v, want the first checkpoint alone", cs)
		}
	}},

	{"RepeatAfterLeaseEndedStillAnswers", func(t *testing.T, e *env) {
		cl := e.Lease()
		first := e.append(cl, cp(0, "h"))
		e.Complete(cl)
		again, created, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(0, "h"))
		if err != nil || created || again.CheckpointID != first.CheckpointID {
			t.Fatalf("repeat after complete: created=%v err=%v", created, err)
		}
		// A repeat must present the attempt's token: another token goes to the fence.
		_, _, err = e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken+1, cp(0, "h"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("repeat with another token: got %v, want stale_lease", err)
		}
		// Anything new is refused now.
		_, _, err = e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(1, "h"))
		if !apperr.Is(err, api.CodeAttemptEnded) {
			t.Fatalf("new sequence after complete: got %v, want attempt_ended", err)
		}
	}},

	{"StaleFenceRefusedAndNothingWritten", func(t *testing.T, e *env) {
		old := e.Lease()
		e.Release(old)
		cur := e.Claim()
		if cur.Run.RunID != old.Run.RunID || cur.Lease.FencingToken <= old.Lease.FencingToken {
			t.Fatalf("reclaim: run %s token %d after %s token %d", cur.Run.RunID, cur.Lease.FencingToken, old.Run.RunID, old.Lease.FencingToken)
		}
		// The old holder writes to its old attempt with its old token.
		_, _, err := e.store.Append(e.Ctx, e.Tenant, old.Attempt.AttemptID, old.Lease.FencingToken, cp(0, "h"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("old attempt, old token: got %v, want stale_lease", err)
		}
		// ... or to the new attempt with its old token.
		_, _, err = e.store.Append(e.Ctx, e.Tenant, cur.Attempt.AttemptID, old.Lease.FencingToken, cp(0, "h"))
		if !apperr.Is(err, api.CodeStaleLease) {
			t.Fatalf("new attempt, old token: got %v, want stale_lease", err)
		}
		for _, id := range []uuid.UUID{old.Attempt.AttemptID, cur.Attempt.AttemptID} {
			if cs := e.all(id); len(cs) != 0 {
				t.Fatalf("refused appends wrote %+v", cs)
			}
			if a := e.attempt(id); a.LastCheckpointID.Valid {
				t.Fatalf("refused appends set LastCheckpointId %s", a.LastCheckpointID.UUID)
			}
		}
		if _, err := e.store.Last(e.Ctx, e.Tenant, cur.Run.RunID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("last after refused appends: got %v, want not_found", err)
		}
	}},

	{"ExpiredFenceRefusedAndNothingWritten", func(t *testing.T, e *env) {
		cl := e.Lease()
		kept := e.append(cl, cp(0, "h0"))
		e.Clock.Advance(apitest.LeaseSeconds * time.Second)
		_, _, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(1, "h1"))
		if !apperr.Is(err, api.CodeLeaseExpired) {
			t.Fatalf("append at the lease's end: got %v, want lease_expired", err)
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 1 || cs[0].CheckpointID != kept.CheckpointID {
			t.Fatalf("stored %+v, want only the checkpoint made under the lease", cs)
		}
		if a := e.attempt(cl.Attempt.AttemptID); a.LastCheckpointID.UUID != kept.CheckpointID {
			t.Fatalf("LastCheckpointId moved to %s", a.LastCheckpointID.UUID)
		}
	}},

	{"LastCheckpointIdFollowsHighestSequence", func(t *testing.T, e *env) {
		cl := e.Lease()
		id := cl.Attempt.AttemptID
		var five checkpoints.Checkpoint
		for _, seq := range []int{0, 1, 2, 5} {
			c := e.append(cl, cp(seq, "h"))
			if a := e.attempt(id); a.LastCheckpointID.UUID != c.CheckpointID {
				t.Fatalf("after sequence %d: LastCheckpointId %s, want %s", seq, a.LastCheckpointID.UUID, c.CheckpointID)
			}
			five = c
		}
		// A late append of a lower sequence is stored but does not move the resume point back.
		e.append(cl, cp(3, "h"))
		if a := e.attempt(id); a.LastCheckpointID.UUID != five.CheckpointID {
			t.Fatalf("after late sequence 3: LastCheckpointId %s, want sequence 5's %s", a.LastCheckpointID.UUID, five.CheckpointID)
		}
		last, err := e.store.Last(e.Ctx, e.Tenant, cl.Run.RunID)
		if err != nil || last.CheckpointID != five.CheckpointID || last.RunID != cl.Run.RunID {
			t.Fatalf("last: %+v %v, want sequence 5 of this run", last, err)
		}
	}},

	{"LastIsNewestAttemptsHighestSequence", func(t *testing.T, e *env) {
		first := e.Lease()
		for seq := range 3 {
			e.append(first, cp(seq, "h"))
		}
		e.Release(first)
		second := e.Claim()
		mine := e.append(second, cp(0, "h"))
		last, err := e.store.Last(e.Ctx, e.Tenant, second.Run.RunID)
		if err != nil || last.CheckpointID != mine.CheckpointID {
			t.Fatalf("last: %+v %v, want the newest attempt's sequence 0, though an older attempt went further", last, err)
		}
		// A newer attempt without a checkpoint does not hide the last one.
		e.Release(second)
		third := e.Claim()
		last, err = e.store.Last(e.Ctx, e.Tenant, third.Run.RunID)
		if err != nil || last.CheckpointID != mine.CheckpointID {
			t.Fatalf("last with a newest attempt that has none: %+v %v", last, err)
		}
	}},

	{"ContinuedRunReadsPredecessorsLastCheckpoint", func(t *testing.T, e *env) {
		cl := e.Lease()
		e.append(cl, cp(0, "h0"))
		want := e.append(cl, cp(1, "h1"))
		e.Complete(cl)
		next, _, err := e.Svc.Continue(e.Ctx, e.Caller, cl.Run.RunID, runs.Continuation{})
		if err != nil {
			t.Fatal(err)
		}
		last, err := e.store.Last(e.Ctx, e.Tenant, next.RunID)
		if err != nil || last.CheckpointID != want.CheckpointID || last.RunID != cl.Run.RunID {
			t.Fatalf("continuation's last: %+v %v, want the predecessor's sequence 1", last, err)
		}
		// Two links back: the continuation ends without a checkpoint and is continued again.
		ncl := e.Claim()
		if ncl.Run.RunID != next.RunID {
			t.Fatalf("claimed %s, want the continuation %s", ncl.Run.RunID, next.RunID)
		}
		e.Complete(ncl)
		third, _, err := e.Svc.Continue(e.Ctx, e.Caller, next.RunID, runs.Continuation{})
		if err != nil {
			t.Fatal(err)
		}
		last, err = e.store.Last(e.Ctx, e.Tenant, third.RunID)
		if err != nil || last.CheckpointID != want.CheckpointID || last.RunID != cl.Run.RunID {
			t.Fatalf("second continuation's last: %+v %v", last, err)
		}
		// Once the newest run has its own checkpoint, that one is last.
		tcl := e.Claim()
		own := e.append(tcl, cp(0, "mine"))
		last, err = e.store.Last(e.Ctx, e.Tenant, third.RunID)
		if err != nil || last.CheckpointID != own.CheckpointID || last.RunID != third.RunID {
			t.Fatalf("after its own checkpoint: %+v %v", last, err)
		}
		// The predecessor's own answer does not look forward.
		if last, err := e.store.Last(e.Ctx, e.Tenant, cl.Run.RunID); err != nil || last.CheckpointID != want.CheckpointID {
			t.Fatalf("the first run's last: %+v %v", last, err)
		}
	}},

	{"LastNotFoundSaysWhy", func(t *testing.T, e *env) {
		_, err := e.store.Last(e.Ctx, e.Tenant, uuid.New())
		if !apperr.Is(err, api.CodeNotFound) || !strings.Contains(err.Error(), "no run") {
			t.Fatalf("missing run: got %v, want not_found naming the run", err)
		}
		cl := e.Lease()
		_, err = e.store.Last(e.Ctx, e.Tenant, cl.Run.RunID)
		if !apperr.Is(err, api.CodeNotFound) || !strings.Contains(err.Error(), "has no checkpoint") {
			t.Fatalf("run without checkpoints: got %v, want not_found saying it has none", err)
		}
		e.Complete(cl)
		next, _, err := e.Svc.Continue(e.Ctx, e.Caller, cl.Run.RunID, runs.Continuation{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.store.Last(e.Ctx, e.Tenant, next.RunID)
		if !apperr.Is(err, api.CodeNotFound) || !strings.Contains(err.Error(), "nor any run it continues") {
			t.Fatalf("chain without checkpoints: got %v, want not_found saying the chain has none", err)
		}
	}},

	{"OtherTenantGets404AndCannotWrite", func(t *testing.T, e *env) {
		cl := e.Lease()
		mine := e.append(cl, cp(0, "h"))
		o := e.other(t)
		id, token := cl.Attempt.AttemptID, cl.Lease.FencingToken
		// A repeat of the owner's sequence, a conflicting one and a new one: all as for a missing attempt.
		for _, n := range []checkpoints.Draft{cp(0, "h"), cp(0, "other"), cp(1, "h")} {
			if _, _, err := o.store.Append(o.Ctx, o.Tenant, id, token, n); !apperr.Is(err, api.CodeNotFound) {
				t.Fatalf("other tenant appends sequence %d: got %v, want not_found", n.Sequence, err)
			}
		}
		if _, err := o.store.List(o.Ctx, o.Tenant, id, checkpoints.Start, 10); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant lists: got %v, want not_found", err)
		}
		if _, err := o.store.Get(o.Ctx, o.Tenant, id, mine.CheckpointID); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("other tenant reads: got %v, want not_found", err)
		}
		_, err := o.store.Last(o.Ctx, o.Tenant, cl.Run.RunID)
		if !apperr.Is(err, api.CodeNotFound) || !strings.Contains(err.Error(), "no run") {
			t.Fatalf("other tenant's last: got %v, want not_found as for a missing run", err)
		}
		if cs := e.all(id); len(cs) != 1 || cs[0].CheckpointID != mine.CheckpointID {
			t.Fatalf("owner's checkpoints changed: %+v", cs)
		}
		if a := e.attempt(id); a.LastCheckpointID.UUID != mine.CheckpointID {
			t.Fatalf("owner's LastCheckpointId changed")
		}
	}},

	{"ConcurrentDuplicatesResolveToOneRow", func(t *testing.T, e *env) {
		cl := e.Lease()
		const n = 8
		type result struct {
			c       checkpoints.Checkpoint
			created bool
			err     error
		}
		run := func(hash func(i int) string, seq int) []result {
			out := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					c, created, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, cp(seq, hash(i)))
					out[i] = result{c, created, err}
				})
			}
			wg.Wait()
			return out
		}
		same := run(func(int) string { return "same" }, 0)
		var created int
		for _, r := range same {
			if r.err != nil {
				t.Fatalf("duplicate append: %v", r.err)
			}
			if r.created {
				created++
			}
			if r.c.CheckpointID != same[0].c.CheckpointID {
				t.Fatalf("duplicates answered different rows: %s and %s", r.c.CheckpointID, same[0].c.CheckpointID)
			}
		}
		if created != 1 {
			t.Fatalf("%d appends created the row, want 1", created)
		}
		diff := run(func(i int) string { return string(rune('a' + i)) }, 1)
		created = 0
		for _, r := range diff {
			switch {
			case r.err == nil && r.created:
				created++
			case !apperr.Is(r.err, api.CodeSequenceConflict):
				t.Fatalf("conflicting append: created=%v err=%v, want created or sequence_conflict", r.created, r.err)
			}
		}
		if created != 1 {
			t.Fatalf("%d conflicting appends created a row, want 1", created)
		}
		if got := sequences(e.all(cl.Attempt.AttemptID)); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("stored sequences %v, want [0 1]", got)
		}
	}},

	{"InvalidCheckpointRefusedAndNothingWritten", func(t *testing.T, e *env) {
		cl := e.Lease()
		long := strings.Repeat("\U0001F600", 17) // 17 runes, 34 UTF-16 code units: over nvarchar(32)
		bad := map[string]func(*checkpoints.Draft){
			"sequence":        func(n *checkpoints.Draft) { n.Sequence = -1 },
			"sequence range":  func(n *checkpoints.Draft) { n.Sequence = 1 << 31 },
			"phase":           func(n *checkpoints.Draft) { n.Phase = 7 },
			"hash":            func(n *checkpoints.Draft) { n.Hash = "" },
			"adapter version": func(n *checkpoints.Draft) { n.AdapterVersion = long },
			"state ref":       func(n *checkpoints.Draft) { n.AdapterStateRef = "" },
		}
		for name, mut := range bad {
			n := cp(0, "h")
			mut(&n)
			if _, _, err := e.store.Append(e.Ctx, e.Tenant, cl.Attempt.AttemptID, cl.Lease.FencingToken, n); !apperr.Is(err, api.CodeInvalidRequest) {
				t.Fatalf("%s: got %v, want invalid_request", name, err)
			}
		}
		if cs := e.all(cl.Attempt.AttemptID); len(cs) != 0 {
			t.Fatalf("invalid appends wrote %+v", cs)
		}
		// The largest sequence the column holds is fine.
		e.append(cl, cp(1<<31-1, "h"))
	}},

	{"ListPagesInSequenceOrder", func(t *testing.T, e *env) {
		cl := e.Lease()
		for _, seq := range []int{4, 0, 3, 1, 2} {
			e.append(cl, cp(seq, "h"))
		}
		id := cl.Attempt.AttemptID
		page, err := e.store.List(e.Ctx, e.Tenant, id, checkpoints.Start, 2)
		if err != nil || !slices.Equal(sequences(page), []int{0, 1}) {
			t.Fatalf("first page %v %v", sequences(page), err)
		}
		page, err = e.store.List(e.Ctx, e.Tenant, id, 1, 2)
		if err != nil || !slices.Equal(sequences(page), []int{2, 3}) {
			t.Fatalf("second page %v %v", sequences(page), err)
		}
		page, err = e.store.List(e.Ctx, e.Tenant, id, 3, 2)
		if err != nil || !slices.Equal(sequences(page), []int{4}) {
			t.Fatalf("last page %v %v", sequences(page), err)
		}
		if _, err := e.store.List(e.Ctx, e.Tenant, uuid.New(), checkpoints.Start, 2); !apperr.Is(err, api.CodeNotFound) {
			t.Fatalf("missing attempt: got %v, want not_found", err)
		}
	}},
}
