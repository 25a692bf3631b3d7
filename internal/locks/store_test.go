package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/ledger-dev/ledger/api"
	"github.com/ledger-dev/ledger/internal/apperr"
	"github.com/ledger-dev/ledger/internal/dbtest"
	"github.com/ledger-dev/ledger/internal/locks"
)

var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestTaskLocks(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, tgt dbtest.Target) {
		t.Run("TaskLocksHaveOneHolder", func(t *testing.T) {
			t.Parallel()
			clock := dbtest.NewClock(epoch)
			db := tgt.Open(t, dbtest.Options{Clock: clock.Now})
			s, ctx, tenant := locks.NewStore(db), context.Background(), dbtest.NewTenant(t, db)
			l, created, err := s.Acquire(ctx, tenant, "agent", "task", "h1", time.Minute)
			if err != nil || !created || l.HolderID != "h1" || !l.HeldUntil.Equal(epoch.Add(time.Minute)) {
				t.Fatalf("acquire: %+v %v %v", l, created, err)
			}
			_, _, err = s.Acquire(ctx, tenant, "agent", "task", "h2", time.Minute)
			ae, ok := apperr.As(err)
			if !ok || ae.Code != api.CodeLockHeld || ae.HeldUntil.IsZero() {
				t.Fatalf("second holder: got %v, want lock_held with heldUntil", err)
			}
			if err := s.Release(ctx, tenant, "agent", "task", "h2"); !apperr.Is(err, api.CodeLockHeld) {
				t.Fatalf("release by another: got %v, want lock_held", err)
			}
			clock.Advance(30 * time.Second)
			l, created, err = s.Acquire(ctx, tenant, "agent", "task", "h1", time.Minute)
			if err != nil || created || !l.HeldUntil.Equal(epoch.Add(90*time.Second)) {
				t.Fatalf("renew: %+v %v %v", l, created, err)
			}
			clock.Advance(2 * time.Minute)
			l, created, err = s.Acquire(ctx, tenant, "agent", "task", "h2", time.Minute)
			if err != nil || !created || l.HolderID != "h2" {
				t.Fatalf("take an expired lock: %+v %v %v", l, created, err)
			}
			// Another tenant has its own lock of the same name.
			other := dbtest.NewTenant(t, db)
			if _, _, err := s.Acquire(ctx, other, "agent", "task", "x", time.Minute); err != nil {
				t.Fatalf("other tenant: %v", err)
			}
			if err := s.Release(ctx, tenant, "agent", "task", "h2"); err != nil {
				t.Fatal(err)
			}
			if err := s.Release(ctx, tenant, "agent", "task", "h2"); err != nil {
				t.Fatalf("release of a free lock: %v", err)
			}
		})
	})
}
