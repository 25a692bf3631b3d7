package sqldb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ledger-dev/ledger/internal/sqldb"
)

// TestGroupCommitIsolatesFailures runs many writes at once, so they share commits, with
// every third one failing after it wrote: the failures leave nothing, the others all land,
// and each caller hears its own outcome.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx := context.Background()
	const n = 300
	bad := errors.New("refused by the caller")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
				if _, err := tx.ExecContext(ctx, insertTenant, fmt.Sprintf("g-%d", i)); err != nil {
					return err
				}
				if i%3 == 0 {
					return bad
				}
				if i%3 == 1 {
					// A duplicate key fails this statement only; the write then gives up.
					_, err := tx.ExecContext(ctx, insertTenant, fmt.Sprintf("g-%d", i))
					return err
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		want := 1
		switch i % 3 {
		case 0:
			if !errors.Is(err, bad) {
				t.Fatalf("write %d: got %v, want its own error", i, err)
			}
			want = 0
		case 1:
			if !sqldb.IsConflict(err) {
				t.Fatalf("write %d: got %v, want a unique violation", i, err)
			}
			want = 0
		default:
			if err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		if got := tenantCount(t, db, fmt.Sprintf("g-%d", i)); got != want {
			t.Fatalf("write %d left %d rows, want %d", i, got, want)
		}
	}
}

// TestGroupCommitCancelledCallerWritesNothing: a caller whose context ends before its turn
// gets the context's error and its write is not made.
func TestGroupCommitCancelledCallerWritesNothing(t *testing.T) {
	t.Parallel()
	db := sqliteDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.Write(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		_, err := tx.ExecContext(ctx, insertTenant, "cancelled")
		return err
	})
	if !errors.Is(err, context.Canceled) || tenantCount(t, db, "cancelled") != 0 {
		t.Fatalf("got %v and %d rows, want context.Canceled and none", err, tenantCount(t, db, "cancelled"))
	}
}
