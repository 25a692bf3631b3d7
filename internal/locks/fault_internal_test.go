package locks

// Fault injection (as internal/runs does it): SQLite has one writer, so two acquires of a
// missing lock never collide there by themselves. The statement hook writes the rival's
// row just before the insert, in the same transaction.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

func TestFaultInjection(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Run("TaskLockAcquireLosesTheRace", func(t *testing.T) {
			t.Parallel()
			clock := dbtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
			s, ctx, tenant := NewStore(db), context.Background(), dbtest.NewTenant(t, db)
			var ran atomic.Bool
			db.SetStatementHook(func(ctx context.Context, tx *sqldb.Tx, st sqldb.Statement) error {
				if st.Query != s.q.insertLock || ran.Load() {
					return nil
				}
				ran.Store(true)
				now, _ := tx.Now(ctx)
				_, err := tx.ExecContext(ctx, s.q.insertLock, tenant, "agent", "task", "rival",
					tx.Dialect.Time(now.Add(time.Minute)), tx.Dialect.Time(now))
				return err
			})
			t.Cleanup(func() { db.SetStatementHook(nil) })
			_, _, err := s.Acquire(ctx, tenant, "agent", "task", "me", time.Minute)
			if !ran.Load() {
				t.Fatal("the injected write never ran: the case did not reach the statement")
			}
			ae, ok := apperr.As(err)
			if !ok || ae.Code != api.CodeLockHeld || ae.HeldUntil.IsZero() {
				t.Fatalf("got %v, want lock_held with heldUntil", err)
			}
		})
	})
}
